package server_test

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestAuthAuditTrail proves, through the real server with authentication on, that token
// actions and changes by real callers are audited under the caller that made them: "bootstrap"
// for the bootstrap token's creation, "token:<id>" for a token caller, "cert:<subject>" for a
// client-certificate caller; that refused calls leave no record; and that no audit event holds
// a bearer token or its hash.
func TestAuthAuditTrail(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newAuthEnvOn(t, openStore(t, b, b.newDatabase(t)))
		// The subject as Go prints it, written out so that a change of format shows.
		const certActor = "cert:CN=ops-admin,O=Acme"
		if got := "cert:" + adminSubject.String(); got != certActor {
			t.Fatalf("admin certificate subject prints as %q, want %q", got, certActor)
		}

		stored, err := e.store.ListTokens(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var bootstrapID string
		for _, tok := range stored {
			if tok.Name == server.BootstrapTokenName {
				bootstrapID = tok.ID
			}
		}
		if bootstrapID == "" || e.ids["admin"] == "" {
			t.Fatalf("no bootstrap token (%q) or admin token (%q) in the env", bootstrapID, e.ids["admin"])
		}
		bootstrapActor, adminActor := "token:"+bootstrapID, "token:"+e.ids["admin"]

		conn := e.dial(t, nil)
		tokens := hookverifyv1.NewTokenServiceClient(conn)

		// A token made by the named admin token and revoked by the bootstrap token: each action
		// is recorded under its own caller.
		created, err := tokens.CreateToken(withToken(t.Context(), e.tokens["admin"]),
			&hookverifyv1.CreateTokenRequest{Name: "audited", Scopes: []string{"verify:acme-*"}})
		if err != nil {
			t.Fatalf("CreateToken by the admin token: %v", err)
		}
		newID, bearer := created.GetToken().GetId(), created.GetBearerToken()
		if _, err := tokens.RevokeToken(withToken(t.Context(), e.admin), &hookverifyv1.RevokeTokenRequest{Id: newID}); err != nil {
			t.Fatalf("RevokeToken by the bootstrap token: %v", err)
		}
		// Refused token actions change nothing and record nothing.
		_, err = tokens.RevokeToken(withToken(t.Context(), e.tokens["verify-all"]), &hookverifyv1.RevokeTokenRequest{Id: e.ids["inbox-all"]})
		refusedWith(t, "RevokeToken by a verify token", err, codes.PermissionDenied)
		_, err = tokens.CreateToken(withToken(t.Context(), e.tokens["inbox-all"]), &hookverifyv1.CreateTokenRequest{Name: "refused", Scopes: []string{"admin"}})
		refusedWith(t, "CreateToken by an inbox token", err, codes.PermissionDenied)

		// Changes by client-certificate callers.
		now := time.Now()
		adminCert := e.ca.issue(t, adminSubject, now.Add(-time.Hour), now.Add(time.Hour), false)
		edgeCert := e.ca.issue(t, edgeSubject, now.Add(-time.Hour), now.Add(time.Hour), false)
		byAdminCert := hookverifyv1.NewAdminServiceClient(e.dial(t, &adminCert))
		if _, err := byAdminCert.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{
			Endpoint: &hookverifyv1.Endpoint{Id: "cert-made", Provider: "github"}}); err != nil {
			t.Fatalf("CreateEndpoint by the admin certificate: %v", err)
		}
		// On the same connection a token decides, and so names the caller.
		if _, err := byAdminCert.CreateEndpoint(withToken(t.Context(), e.tokens["admin"]), &hookverifyv1.CreateEndpointRequest{
			Endpoint: &hookverifyv1.Endpoint{Id: "token-over-cert", Provider: "github"}}); err != nil {
			t.Fatalf("CreateEndpoint by the admin token over the admin certificate: %v", err)
		}
		_, err = hookverifyv1.NewAdminServiceClient(e.dial(t, &edgeCert)).CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{
			Endpoint: &hookverifyv1.Endpoint{Id: "cert-refused", Provider: "github"}})
		refusedWith(t, "CreateEndpoint by a verify certificate", err, codes.PermissionDenied)

		resp, err := byAdminCert.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1000})
		if err != nil {
			t.Fatalf("ListAuditEvents by the admin certificate: %v", err)
		}
		events := resp.GetEvents()
		// find returns the events of an action whose detail names a token id (tokenID not
		// empty) or whose endpoint is endpointID.
		find := func(action, tokenID, endpointID string) []*hookverifyv1.AuditEvent {
			var out []*hookverifyv1.AuditEvent
			for _, ev := range events {
				if ev.GetAction() != action {
					continue
				}
				if tokenID != "" && !strings.HasPrefix(ev.GetDetail()+" ", "token "+tokenID+" ") {
					continue
				}
				if endpointID != "" && ev.GetEndpointId() != endpointID {
					continue
				}
				out = append(out, ev)
			}
			return out
		}
		one := func(what string, got []*hookverifyv1.AuditEvent, actor string) *hookverifyv1.AuditEvent {
			t.Helper()
			if len(got) != 1 {
				t.Errorf("%s: %d audit events %v, want 1", what, len(got), got)
				return nil
			}
			if got[0].GetActor() != actor {
				t.Errorf("%s: actor %q, want %q", what, got[0].GetActor(), actor)
			}
			return got[0]
		}

		t.Run("bootstrap token creation is recorded under bootstrap", func(t *testing.T) {
			ev := one("bootstrap token.create", find("token.create", bootstrapID, ""), "bootstrap")
			if ev != nil && (!strings.Contains(ev.GetDetail(), `name="bootstrap"`) || !strings.Contains(ev.GetDetail(), "scopes=admin")) {
				t.Errorf("bootstrap event detail %q: want the name and admin scope", ev.GetDetail())
			}
			for _, ev := range events {
				if ev.GetActor() == "bootstrap" && !strings.HasPrefix(ev.GetDetail()+" ", "token "+bootstrapID+" ") {
					t.Errorf("event %v is recorded under bootstrap: only the bootstrap token's creation is", ev)
				}
			}
		})

		t.Run("token actions are recorded under the calling token", func(t *testing.T) {
			// The env made its tokens with the bootstrap token.
			for name, id := range e.ids {
				one("token.create of "+name, find("token.create", id, ""), bootstrapActor)
			}
			ev := one("token.create of the new token", find("token.create", newID, ""), adminActor)
			if ev != nil && (!strings.Contains(ev.GetDetail(), `name="audited"`) || !strings.Contains(ev.GetDetail(), "scopes=verify:acme-*")) {
				t.Errorf("token.create detail %q: want the name and scopes", ev.GetDetail())
			}
			ev = one("token.revoke of the new token", find("token.revoke", newID, ""), bootstrapActor)
			if ev != nil && ev.GetDetail() != "token "+newID {
				t.Errorf("token.revoke detail %q, want %q", ev.GetDetail(), "token "+newID)
			}
			if got := find("token.revoke", "", ""); len(got) != 1 {
				t.Errorf("%d token.revoke events %v, want 1: a refused revocation is not recorded", len(got), got)
			}
			if got := find("token.create", "", ""); len(got) != 2+len(e.ids) {
				t.Errorf("%d token.create events, want %d (bootstrap, the env's, the new one): a refused creation is not recorded", len(got), 2+len(e.ids))
			}
		})

		t.Run("changes by a client certificate are recorded under cert:<subject>", func(t *testing.T) {
			one("endpoint.create by the admin certificate", find("endpoint.create", "", "cert-made"), certActor)
			one("endpoint.create by a token over a certificate", find("endpoint.create", "", "token-over-cert"), adminActor)
			if got := find("endpoint.create", "", "cert-refused"); len(got) != 0 {
				t.Errorf("refused CreateEndpoint recorded: %v", got)
			}
			for _, id := range []string{"acme-orders", "acme-billing", "globex-orders"} {
				one("endpoint.create of "+id, find("endpoint.create", "", id), bootstrapActor)
			}
		})

		t.Run("every event names a known caller", func(t *testing.T) {
			known := map[string]bool{"bootstrap": true, bootstrapActor: true, adminActor: true, certActor: true}
			for _, ev := range events {
				if !known[ev.GetActor()] {
					t.Errorf("event %v: actor %q is none of the callers that made changes", ev, ev.GetActor())
				}
			}
		})

		t.Run("no event holds a bearer token or its hash", func(t *testing.T) {
			secrets := map[string]string{"the new token": bearer, "the bootstrap token": e.admin}
			for name, tok := range e.tokens {
				secrets["the "+name+" token"] = tok
			}
			trail := resp.String()
			for name, tok := range secrets {
				hash := server.HashToken(tok)
				for form, s := range map[string]string{
					"token": tok, "hex hash": hex.EncodeToString(hash),
					"base64 hash": base64.StdEncoding.EncodeToString(hash), "base64url hash": base64.RawURLEncoding.EncodeToString(hash),
				} {
					if strings.Contains(trail, s) {
						t.Errorf("the audit trail holds %s of %s", form, name)
					}
				}
			}
		})
	})
}
