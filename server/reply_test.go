package server_test

import (
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// TestProviderSuccessReplies checks that providers which require a particular success reply
// (Adyen's "[accepted]", Dropbox Sign's "Hello API Event Received") get it for accepted and
// duplicate deliveries alike, so they stop retrying.
func TestProviderSuccessReplies(t *testing.T) {
	e := newEnv(t, backends[0])
	for _, p := range protocol.Default().All() {
		if p.SuccessReply == nil {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			signing, verifying, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "reply-" + p.Name, Provider: p.Name})
			e.addSecret(t, "reply-"+p.Name, verifying)
			signed, err := protocol.SignDelivery(p, protocol.SignInput{Body: protocol.ExampleBody(p, "evt-1"), EventID: "evt-1", Timestamp: e.clock.Now(), Method: "POST", URL: "https://hooks.example.com/x"}, []string{signing})
			if err != nil {
				t.Fatal(err)
			}
			req := &hookverifyv1.VerifyRequest{EndpointId: "reply-" + p.Name, Body: signed.Body, Method: "POST", Url: signed.URL}
			for _, h := range signed.Headers {
				req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
			}
			for _, want := range []hookverifyv1.Verdict{hookverifyv1.Verdict_VERDICT_ACCEPTED, hookverifyv1.Verdict_VERDICT_DUPLICATE} {
				resp := e.verify(t, req)
				if resp.GetVerdict() != want || string(resp.GetReply().GetBody()) != string(p.SuccessReply.Body) || resp.GetReply().GetStatus() != int32(p.SuccessReply.Status) {
					t.Fatalf("got %s with reply %d %q, want %s with %q", resp.GetVerdict(), resp.GetReply().GetStatus(), resp.GetReply().GetBody(), want, p.SuccessReply.Body)
				}
				e.clock.Advance(time.Second)
			}
		})
	}
}
