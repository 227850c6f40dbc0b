package server_test

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// TestProviderHandshakesStoreNothingAndCountOnlyAuthentications settles, through the whole
// server, what README's verdict table and "Secret lifecycle" say of provider handshakes: a
// HANDSHAKE claims and stores nothing, an unsigned handshake (Asana's X-Hook-Secret, Braintree's
// bt_challenge, Dropbox's and Meta's GETs) counts as no use of any secret, a signed one (Slack's
// url_verification) counts as a use of the secret that signed it, and a forged Asana handshake
// cannot add or replace the endpoint's secret: only AddSecret does.
func TestProviderHandshakesStoreNothingAndCountOnlyAuthentications(t *testing.T) {
	t.Parallel()
	b := backends[0] // sqlite: what is checked here is the server's, not the store's
	m := server.NewMetrics()
	e := newEnvWith(t, b, func(o *server.Options) { o.Metrics = m })
	ctx := t.Context()
	verify := func(t *testing.T, req *hookverifyv1.VerifyRequest) *hookverifyv1.VerifyResponse {
		t.Helper()
		resp, err := e.verifier.Verify(ctx, req)
		if err != nil {
			t.Fatalf("Verify: %v", err)
		}
		return resp
	}
	replyHeader := func(resp *hookverifyv1.VerifyResponse, name string) string {
		for _, h := range resp.GetReply().GetHeaders() {
			if strings.EqualFold(h.GetName(), name) {
				return h.GetValue()
			}
		}
		return ""
	}
	sign := func(t *testing.T, p *protocol.Protocol, body []byte, secret string) []*hookverifyv1.HeaderField {
		t.Helper()
		hs, err := p.Sign(protocol.SignInput{Body: body, Timestamp: e.clock.Now(), Method: "POST", URL: "https://hooks.example.com/x"}, []string{secret})
		if err != nil {
			t.Fatal(err)
		}
		out := make([]*hookverifyv1.HeaderField, 0, len(hs))
		for _, h := range hs {
			out = append(out, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
		}
		return out
	}

	t.Run("a forged Asana handshake adds and replaces no secret", func(t *testing.T) {
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "asana", Provider: "asana"})
		const real, forged = "real-asana-secret-0123456789abcdef", "attacker-chosen-secret-0123456789"
		realID := e.addSecret(t, "asana", real)
		resp := verify(t, &hookverifyv1.VerifyRequest{EndpointId: "asana", Method: "POST", Url: "https://hooks.example.com/asana",
			Headers: []*hookverifyv1.HeaderField{{Name: "X-Hook-Secret", Value: forged}}})
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || resp.GetReply().GetStatus() != 200 || replyHeader(resp, "X-Hook-Secret") != forged || resp.GetSecretId() != "" {
			t.Fatalf("handshake answered %v", resp)
		}
		secrets, err := e.store.ListSecrets(ctx, "asana")
		if err != nil {
			t.Fatal(err)
		}
		if len(secrets) != 1 || secrets[0].ID != realID {
			t.Fatalf("after a forged handshake the endpoint has secrets %+v, want only %s", secrets, realID)
		}
		body := []byte(`{"events":[]}`)
		forgedDelivery := &hookverifyv1.VerifyRequest{EndpointId: "asana", Method: "POST", Url: "https://hooks.example.com/asana", Body: body, Headers: sign(t, protocol.Asana(), body, forged)}
		if resp := verify(t, forgedDelivery); resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_REJECTED {
			t.Fatalf("a delivery signed with the handshake's forged secret: %v", resp)
		}
		if got := secretUses(t, m)[realID]; got != 0 {
			t.Errorf("the unsigned handshake counted %g uses of the real secret", got)
		}
	})

	t.Run("unsigned GET and bt_challenge handshakes name no secret", func(t *testing.T) {
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "bt", Provider: "braintree"})
		btID := e.addSecret(t, "bt", "pubkey0123:privkey0123456789abcdef")
		resp := verify(t, &hookverifyv1.VerifyRequest{EndpointId: "bt", Method: "GET", Url: "https://hooks.example.com/bt?bt_challenge=20f9f8ed05f77439fe955c977e4c8a53"})
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || resp.GetSecretId() != "" || !strings.HasPrefix(string(resp.GetReply().GetBody()), "pubkey0123|") {
			t.Fatalf("bt_challenge answered %v", resp)
		}
		if got := secretUses(t, m)[btID]; got != 0 {
			t.Errorf("an unsigned bt_challenge counted %g uses of the secret", got)
		}

		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "dbx", Provider: "dropbox"})
		resp = verify(t, &hookverifyv1.VerifyRequest{EndpointId: "dbx", Method: "GET", Url: "https://hooks.example.com/dbx?challenge=%3Cscript%3Ealert(1)%3C%2Fscript%3E"})
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || string(resp.GetReply().GetBody()) != "<script>alert(1)</script>" ||
			!strings.HasPrefix(replyHeader(resp, "Content-Type"), "text/plain") || replyHeader(resp, "X-Content-Type-Options") != "nosniff" {
			t.Fatalf("Dropbox challenge answered %v", resp)
		}

		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "meta", Provider: "meta", Options: map[string]string{"verify_token": "meatyhamhock"}})
		resp = verify(t, &hookverifyv1.VerifyRequest{EndpointId: "meta", Method: "GET", Url: "https://hooks.example.com/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock"})
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || string(resp.GetReply().GetBody()) != "1158201444" || replyHeader(resp, "X-Content-Type-Options") != "nosniff" {
			t.Fatalf("Meta verification answered %v", resp)
		}
		resp = verify(t, &hookverifyv1.VerifyRequest{EndpointId: "meta", Method: "GET", Url: "https://hooks.example.com/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=guess"})
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_REJECTED || resp.GetReply().GetStatus() != 401 || strings.Contains(string(resp.GetReply().GetBody()), "1158201444") {
			t.Fatalf("Meta verification with a wrong verify_token answered %v", resp)
		}
	})

	t.Run("a signed handshake counts as a use of its secret", func(t *testing.T) {
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "slack", Provider: "slack"})
		const secret = "8f742231b10e8888abcd99yyyzzz85a5"
		id := e.addSecret(t, "slack", secret)
		body := []byte(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
		resp := verify(t, &hookverifyv1.VerifyRequest{EndpointId: "slack", Method: "POST", Url: "https://hooks.example.com/slack", Body: body, Headers: sign(t, protocol.Slack(), body, secret)})
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || string(resp.GetReply().GetBody()) != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" || resp.GetSecretId() != id {
			t.Fatalf("url_verification answered %v", resp)
		}
		if got := secretUses(t, m)[id]; got != 1 {
			t.Errorf("the signed url_verification counted %g uses of its secret, want 1", got)
		}
	})

	if n := e.count(t); n != 0 {
		t.Errorf("handshakes stored %d deliveries", n)
	}
}

// TestAsanaHandshakeSecretKeptWhenAsked: Asana shows its webhook's secret only in the
// X-Hook-Secret of the handshake, which the edge answers and logs no header of, so an endpoint
// that asks (handshake_secret_until, still ahead) and has no secret in force keeps the
// handshake's secret, sealed and audited, and the deliveries signed with it are accepted. Any
// other handshake keeps nothing: after the window, on an endpoint that did not ask, and once a
// secret is in force (a second handshake, perhaps forged, within the window).
func TestAsanaHandshakeSecretKeptWhenAsked(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		until := e.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
		handshake := func(t *testing.T, id, secret string) {
			t.Helper()
			resp, err := e.verifier.Verify(t.Context(), &hookverifyv1.VerifyRequest{EndpointId: id, Method: "POST", Url: "https://hooks.example.com/" + id,
				Headers: []*hookverifyv1.HeaderField{{Name: "X-Hook-Secret", Value: secret}}})
			if err != nil || resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE {
				t.Fatalf("handshake answered %v, %v", resp, err)
			}
		}
		secrets := func(t *testing.T, id string) []storage.Secret {
			t.Helper()
			list, err := e.store.ListSecrets(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			return list
		}
		const real, forged = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "attacker-chosen-secret-0123456789"
		asana := protocol.Asana()
		delivery := func(id, secret string) *hookverifyv1.VerifyRequest {
			body := []byte(`{"events":[{"action":"changed","resource":{"gid":"` + id + `"}}]}`)
			hs, err := asana.Sign(protocol.SignInput{Body: body}, []string{secret})
			if err != nil {
				t.Fatal(err)
			}
			req := &hookverifyv1.VerifyRequest{EndpointId: id, Method: "POST", Url: "https://hooks.example.com/" + id, Body: body}
			for _, h := range hs {
				req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
			}
			return req
		}

		// A window more than an hour ahead (a mistyped year, say) is refused.
		_, err := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "far", Provider: "asana",
			Options: map[string]string{protocol.HandshakeSecretUntilOption: e.clock.Now().Add(61 * time.Minute).Format(time.RFC3339)}}})
		wantCode(t, err, codes.InvalidArgument)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "asked", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		handshake(t, "asked", real)
		kept := secrets(t, "asked")
		if len(kept) != 1 || kept[0].Fingerprint != secretbox.Fingerprint("asked", []byte(real)) {
			t.Fatalf("after the handshake the endpoint has secrets %+v, want the handshake's", kept)
		}
		if got := e.accept(t, delivery("asked", real)).GetSecretId(); got != kept[0].ID {
			t.Fatalf("a delivery signed with the kept secret named %q, want %s", got, kept[0].ID)
		}
		events, err := e.store.ListAuditEvents(t.Context(), storage.AuditFilter{EndpointID: "asked", Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(events, func(ev storage.AuditEvent) bool { return ev.Action == "secret.add" && ev.SecretID == kept[0].ID }) {
			t.Errorf("no secret.add audit event for the kept secret: %+v", events)
		}
		// A second handshake within the window, the secret now in force: answered, not kept.
		handshake(t, "asked", forged)
		if list := secrets(t, "asked"); len(list) != 1 {
			t.Fatalf("a second handshake was kept too: %+v", list)
		}
		e.reject(t, delivery("asked", forged), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)

		if ep, err := e.store.GetEndpoint(t.Context(), "asked"); err != nil || ep.Options[protocol.HandshakeSecretUntilOption] != "" {
			t.Errorf("the request to keep a handshake's secret stays after one was kept: %+v, %v", ep.Options, err)
		}

		// Two handshakes at once, on two instances whose caches both saw the request: one
		// alone is kept.
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "raced", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		other := e.start(t, e.store)
		for _, in := range []*instance{e.instance, other} {
			if resp, err := in.verifier.Verify(t.Context(), delivery("raced", real)); err == nil || resp != nil {
				t.Fatalf("a delivery before any secret: %v, %v; want UNAVAILABLE", resp, err)
			}
		}
		var wg sync.WaitGroup
		for i, in := range []*instance{e.instance, other} {
			wg.Go(func() {
				resp, err := in.verifier.Verify(t.Context(), &hookverifyv1.VerifyRequest{EndpointId: "raced", Method: "POST", Url: "https://hooks.example.com/raced",
					Headers: []*hookverifyv1.HeaderField{{Name: "X-Hook-Secret", Value: fmt.Sprintf("%s-%d", forged, i)}}})
				if err != nil || resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE {
					t.Errorf("handshake %d answered %v, %v", i, resp, err)
				}
			})
		}
		wg.Wait()
		if list := secrets(t, "raced"); len(list) != 1 {
			t.Errorf("two handshakes at once kept %d secrets, want 1", len(list))
		}

		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "not-asked", Provider: "asana"})
		handshake(t, "not-asked", forged)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "too-late", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		e.clock.Advance(5 * time.Minute)
		handshake(t, "too-late", forged)
		for _, id := range []string{"not-asked", "too-late"} {
			if list := secrets(t, id); len(list) != 0 {
				t.Errorf("%s kept a handshake's secret: %+v", id, list)
			}
		}
	})
}
