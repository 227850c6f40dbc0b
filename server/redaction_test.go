package server_test

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
)

// TestCredentialsAreNotStored checks every protocol whose deliveries carry the secret itself
// (a token, Basic credentials, a URL parameter), found by looking for the secret in what its
// own Sign sends: once accepted, the delivery workers lease (as stored) holds the secret in no
// header and not in its URL, and says where it was redacted.
func TestCredentialsAreNotStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
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
			if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
				t.Fatalf("%s: Ack: %v", c.name, err)
			}
		}
		// bearer-token, basic-auth, shared-token, okta, postmark, gitlab's token, mailchimp's URL:
		// fewer means the search above no longer finds them.
		if carriers < 7 {
			t.Errorf("%d protocols send their secret with each delivery, want at least 7", carriers)
		}
	})
}
