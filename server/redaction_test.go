package server_test

import (
	"bytes"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// TestCredentialsAreNotStored checks every protocol whose deliveries carry the secret itself
// (a token, Basic credentials, a URL parameter), found by looking for the secret in what its
// own Sign sends: once accepted, neither the database nor the delivery workers lease holds the
// secret in a header or its URL, and the lease says where it was redacted; one stored with the secret, as a
// release before redaction stored it, is handed out redacted, leased and as a dead letter.
func TestCredentialsAreNotStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 }) // one nack: dead
		type secrets struct {
			p                  *protocol.Protocol
			name               string
			signing, verifying string
		}
		var cases []secrets
		for _, p := range protocol.Default().All() {
			signing, verifying, err := p.ExampleSecret()
			if err != nil {
				t.Fatalf("%s: example secret: %v", p.Name, err)
			}
			cases = append(cases, secrets{p, p.Name, signing, verifying})
		}
		// GitLab's example secret is a signing token; a secret token is sent as it is.
		gitlab, _ := protocol.Default().Lookup("gitlab")
		cases = append(cases, secrets{gitlab, "gitlab-secret-token", "glsecret-7f3a9c2e41", "glsecret-7f3a9c2e41"})
		carriers := 0
		for _, c := range cases {
			p, signing, verifying := c.p, c.signing, c.verifying
			forms := []string{signing, base64.StdEncoding.EncodeToString([]byte(signing)), url.QueryEscape(signing)}
			carries := func(s string) bool {
				for _, f := range forms {
					if strings.Contains(s, f) {
						return true
					}
				}
				return false
			}
			id := "redact-" + c.name
			eventID := "evt_redact_" + strings.ReplaceAll(c.name, "-", "_")
			in := protocol.SignInput{Body: protocol.ExampleBody(p, eventID), EventID: eventID, Timestamp: e.clock.Now(),
				Method: "POST", URL: "https://hooks.example.com/" + id + "?tenant=7"}
			signed, err := protocol.SignDelivery(p, in, []string{signing})
			if err != nil {
				t.Fatalf("%s: signing: %v", c.name, err)
			}
			req := &hookverifyv1.VerifyRequest{EndpointId: id, Body: signed.Body, Method: "POST", Url: signed.URL}
			sent := carries(signed.URL)
			for _, h := range signed.Headers {
				req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
				sent = sent || carries(h.Value)
			}
			if !sent {
				continue
			}
			carriers++
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: id, Provider: p.Name})
			e.addSecret(t, id, verifying)
			e.accept(t, req)
			leased := lease(t, e, 1, time.Minute)
			if len(leased) != 1 {
				t.Fatalf("%s: leased %d deliveries, want the one accepted", c.name, len(leased))
			}
			d := leased[0]
			redacted := strings.Contains(d.GetUrl(), server.Redacted)
			if carries(d.GetUrl()) {
				t.Errorf("%s: the stored URL holds the secret: %s", c.name, d.GetUrl())
			}
			for _, h := range d.GetHeaders() {
				if carries(h.GetValue()) {
					t.Errorf("%s: the stored header %s holds the secret", c.name, h.GetName())
				}
				redacted = redacted || h.GetValue() == server.Redacted
			}
			if !redacted {
				t.Errorf("%s: nothing stored says where the credential was", c.name)
			}
			// And in the database itself: Lease redacts what it hands out (for rows an older
			// release stored), so a Verify that stored the secret would pass the checks above.
			stored, err := e.store.GetDelivery(t.Context(), d.GetInboxId())
			if err != nil {
				t.Fatalf("%s: GetDelivery: %v", c.name, err)
			}
			if carries(stored.URL) {
				t.Errorf("%s: the database holds the secret in the URL: %s", c.name, stored.URL)
			}
			for _, h := range stored.Headers {
				if carries(h.Value) {
					t.Errorf("%s: the database holds the secret in header %s", c.name, h.Name)
				}
			}
			if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
				t.Fatalf("%s: Ack: %v", c.name, err)
			}

			// The same request stored as a release before redaction stored it, with the secret
			// in it: it is handed out redacted all the same, leased and as a dead letter.
			old := storage.Delivery{InboxID: "inbox-old-" + c.name, Scope: id, EventID: eventID + "_old", EndpointID: id,
				OperationKey: "op-old-" + c.name, Method: "POST", URL: signed.URL, Body: signed.Body, ReceivedAt: e.clock.Now()}
			for _, h := range signed.Headers {
				old.Headers = append(old.Headers, storage.Header{Name: h.Name, Value: h.Value})
			}
			if r, err := e.store.Claim(t.Context(), old); err != nil || !r.Accepted {
				t.Fatalf("%s: storing as an older release did: %+v, %v", c.name, r, err)
			}
			leased = lease(t, e, 1, time.Minute)
			if len(leased) != 1 {
				t.Fatalf("%s: leased %d deliveries, want the one stored unredacted", c.name, len(leased))
			}
			if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: leased[0].GetInboxId(), LeaseToken: leased[0].GetLeaseToken(), Error: "poison"}); err != nil {
				t.Fatalf("%s: Nack: %v", c.name, err)
			}
			dead, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{EndpointIds: []string{id}})
			if err != nil || len(dead.GetDeliveries()) != 1 {
				t.Fatalf("%s: ListDeadLetters = %v, %v; want the one stored unredacted", c.name, dead, err)
			}
			for how, d := range map[string]*hookverifyv1.InboxDelivery{"leased": leased[0], "dead": dead.GetDeliveries()[0]} {
				if carries(d.GetUrl()) {
					t.Errorf("%s: stored by an older release, %s: the URL holds the secret: %s", c.name, how, d.GetUrl())
				}
				for _, h := range d.GetHeaders() {
					if carries(h.GetValue()) {
						t.Errorf("%s: stored by an older release, %s: the header %s holds the secret", c.name, how, h.GetName())
					}
				}
			}
			if _, err := e.inbox.Discard(t.Context(), &hookverifyv1.DiscardRequest{InboxId: leased[0].GetInboxId(), Reason: "test"}); err != nil {
				t.Fatalf("%s: Discard: %v", c.name, err)
			}
		}
		// bearer-token, basic-auth, shared-token, okta, postmark, gitlab's token, mailchimp's URL:
		// fewer means the search above no longer finds them.
		if carriers < 7 {
			t.Errorf("%d protocols send their secret with each delivery, want at least 7", carriers)
		}
	})
}

// TestVerifyTokenIsStoredAsDigest: Meta's verify_token, a credential given as an endpoint
// option, reaches neither the database, the API's answers, the audit trail nor the log as
// given, yet the subscription GET carrying it is answered, also after the options read back
// are sent again; one stored as given by an older version is rewritten at start-up.
func TestVerifyTokenIsStoredAsDigest(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		const token = "meta-verify-8c41e07d"
		handshake := func(id, presented string) *hookverifyv1.VerifyResponse {
			return e.verify(t, &hookverifyv1.VerifyRequest{EndpointId: id, Method: "GET",
				Url: "https://hooks.example.com/" + id + "?hub.mode=subscribe&hub.challenge=31337&hub.verify_token=" + url.QueryEscape(presented)})
		}
		answers := func(id string) {
			t.Helper()
			if resp := handshake(id, token); resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || string(resp.GetReply().GetBody()) != "31337" {
				t.Fatalf("%s: the subscription GET got %v %q, want the challenge echoed", id, resp.GetVerdict(), resp.GetReply().GetBody())
			}
			if resp := handshake(id, token+"x"); resp.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH {
				t.Fatalf("%s: a wrong token got %v %v", id, resp.GetVerdict(), resp.GetRejectReason())
			}
		}
		storedToken := func(id string) string {
			t.Helper()
			ep, err := e.store.GetEndpoint(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			return ep.Options["verify_token"]
		}

		created := e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "meta", Provider: "meta", Options: map[string]string{"verify_token": token}})
		digest := created.GetOptions()["verify_token"]
		if digest == "" || strings.Contains(digest, token) || storedToken("meta") != digest {
			t.Fatalf("created with verify_token %q, stored %q: want the same digest", digest, storedToken("meta"))
		}
		answers("meta")
		// An update that sends back the options it read keeps the digest.
		updated, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "meta", Options: created.GetOptions(), Disabled: false}})
		if err != nil {
			t.Fatal(err)
		}
		if got := updated.GetEndpoint().GetOptions()["verify_token"]; got != digest || storedToken("meta") != digest {
			t.Fatalf("after sending the digest back: answered %q, stored %q, want %q", got, storedToken("meta"), digest)
		}
		answers("meta")

		// An endpoint written by a version that stored the token as given.
		legacy := storage.Endpoint{ID: "meta-old", Provider: "meta", DedupeScope: "meta-old", TimestampTolerance: 5 * time.Minute,
			MaxBodyBytes: server.DefaultMaxBodyBytes, Options: map[string]string{"verify_token": token}, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()}
		if err := e.store.CreateEndpoint(t.Context(), legacy); err != nil {
			t.Fatal(err)
		}
		if n, err := e.srv.DigestStoredCredentialOptions(t.Context(), e.store); err != nil || n != 1 {
			t.Fatalf("start-up upgrade rewrote %d endpoints (%v), want 1", n, err)
		}
		if got := storedToken("meta-old"); strings.Contains(got, token) || !strings.HasPrefix(got, "sha256-salted:") {
			t.Fatalf("after the upgrade the stored verify_token is %q", got)
		}
		answers("meta-old")
		if n, err := e.srv.DigestStoredCredentialOptions(t.Context(), e.store); err != nil || n != 0 {
			t.Fatalf("a second upgrade rewrote %d endpoints (%v), want none", n, err)
		}

		events, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		upgraded := false
		for _, ev := range events.GetEvents() {
			if strings.Contains(ev.GetDetail(), token) {
				t.Errorf("audit event %s %s holds the token: %s", ev.GetAction(), ev.GetEndpointId(), ev.GetDetail())
			}
			upgraded = upgraded || (ev.GetEndpointId() == "meta-old" && ev.GetActor() == server.UpgradePrincipal.Name)
		}
		if !upgraded {
			t.Error("the start-up upgrade left no audit event")
		}
		list, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(list.String(), token) {
			t.Error("ListEndpoints shows the token")
		}
		if bytes.Contains(e.transcript.Bytes(), []byte(token)) || bytes.Contains(e.logs.Bytes(), []byte(token)) {
			t.Error("an API answer or a log line holds the token")
		}
	})
}
