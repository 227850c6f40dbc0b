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
			req := signedRequest(t, p, "reply-"+p.Name, protocol.SignInput{Body: protocol.ExampleBody(p, "evt-1"), EventID: "evt-1", Timestamp: e.clock.Now(), Method: "POST", URL: "https://hooks.example.com/x"}, signing)
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

// TestDiscordWebhookEventsAcknowledgedWith204: Discord asks a Webhook Events endpoint to
// "respond with a 204 No Content" (developers/events/webhook-events), for a new event and a
// retry alike; an interaction stored for a worker gets a deferred Interaction Response.
func TestDiscordWebhookEventsAcknowledgedWith204(t *testing.T) {
	e := newEnv(t, backends[0])
	p, _ := protocol.Default().Lookup("discord")
	signing, verifying, err := p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "discord-events", Provider: p.Name})
	e.addSecret(t, "discord-events", verifying)
	deliver := func(body string) *hookverifyv1.VerifyRequest {
		return signedRequest(t, p, "discord-events", protocol.SignInput{Body: []byte(body), Timestamp: e.clock.Now(), Method: "POST", URL: "https://hooks.example.com/discord"}, signing)
	}
	event := deliver(`{"version":1,"application_id":"1234560123453231555","type":1,"event":{"type":"APPLICATION_AUTHORIZED","timestamp":"2024-10-18T14:42:53.064834","data":{"user":{"id":"1"}}}}`)
	for _, want := range []hookverifyv1.Verdict{hookverifyv1.Verdict_VERDICT_ACCEPTED, hookverifyv1.Verdict_VERDICT_DUPLICATE} {
		resp := e.verify(t, event)
		if resp.GetVerdict() != want || resp.GetReply().GetStatus() != 204 || len(resp.GetReply().GetBody()) != 0 {
			t.Fatalf("webhook event: got %s with reply %d %q, want %s with 204 and no body", resp.GetVerdict(), resp.GetReply().GetStatus(), resp.GetReply().GetBody(), want)
		}
	}
	command := deliver(`{"application_id":"1234560123453231555","id":"1234567890123456789","token":"dG9r","type":2,"version":1}`)
	for _, want := range []hookverifyv1.Verdict{hookverifyv1.Verdict_VERDICT_ACCEPTED, hookverifyv1.Verdict_VERDICT_DUPLICATE} {
		resp := e.verify(t, command)
		if resp.GetVerdict() != want || resp.GetReply().GetStatus() != 200 || string(resp.GetReply().GetBody()) != `{"type":5}` {
			t.Fatalf("interaction: got %s with reply %d %q, want %s with 200 {\"type\":5}", resp.GetVerdict(), resp.GetReply().GetStatus(), resp.GetReply().GetBody(), want)
		}
	}
}

// TestXeroRejectionsHaveNoBody: Xero's Intent to Receive sends deliberately mis-signed
// deliveries that must get 401, and "it must also respond within the guidelines of all webhook
// requests", one of which is "There is no body in the response"
// (developer.xero.com/documentation/webhooks/configuring-your-server). A rejection's JSON
// body could fail the validation, and without it Xero sends no events.
func TestXeroRejectionsHaveNoBody(t *testing.T) {
	e := newEnv(t, backends[0])
	p, _ := protocol.Default().Lookup("xero")
	_, verifying, err := p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "xero-itr", Provider: p.Name})
	e.addSecret(t, "xero-itr", verifying)
	body := []byte(`{"events":[],"lastEventSequence":0,"firstEventSequence":0,"entropy":"S0m3r4Nd0mt3xt"}`)
	for _, signature := range []string{"", "bm90IHRoZSBzaWduYXR1cmUgb2YgdGhpcyBib2R5IQ=="} {
		req := &hookverifyv1.VerifyRequest{EndpointId: "xero-itr", Body: body, Method: "POST", Url: "https://hooks.example.com/xero"}
		if signature != "" {
			req.Headers = []*hookverifyv1.HeaderField{{Name: "x-xero-signature", Value: signature}}
		}
		resp := e.verify(t, req)
		reply := resp.GetReply()
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_REJECTED || reply.GetStatus() != 401 || len(reply.GetBody()) != 0 || len(reply.GetHeaders()) != 0 {
			t.Fatalf("signature %q: got %s (%s) with reply %d %v %q, want REJECTED with a bare 401", signature, resp.GetVerdict(), resp.GetRejectReason(), reply.GetStatus(), reply.GetHeaders(), reply.GetBody())
		}
	}
}

// TestUnknownEndpointIsNot404: Typeform disables a webhook at once on a 404 or 410 ("no retry
// is performed, and the webhook is disabled immediately", typeform.com/developers/webhooks,
// Delivery retries). A delivery to an endpoint id not created yet (the URL registered at the
// provider first, or created on another instance within --cache-ttl) got 404, and the webhook
// stayed off after the endpoint was created. No rejection may use a status on which a provider
// gives up on the endpoint for good.
func TestUnknownEndpointIsNot404(t *testing.T) {
	e := newEnv(t, backends[0])
	p, _ := protocol.Default().Lookup("typeform")
	signing, _, err := p.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	req := signedRequest(t, p, "tf-not-yet", protocol.SignInput{Body: protocol.ExampleBody(p, "evt-1"), EventID: "evt-1", Timestamp: e.clock.Now(), Method: "POST", URL: "https://hooks.example.com/tf"}, signing)
	resp := e.verify(t, req)
	if resp.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT {
		t.Fatalf("got %s %s, want REJECTED UNKNOWN_ENDPOINT", resp.GetVerdict(), resp.GetRejectReason())
	}
	if got := resp.GetReply().GetStatus(); got == 404 || got == 410 || got < 400 || got > 499 {
		t.Fatalf("unknown endpoint answered %d: want a 4xx on which no provider gives up for good", got)
	}
}

// signedRequest is the Verify request of a delivery to endpointID as p's provider sends it
// (protocol.SignDelivery), signed with signing.
func signedRequest(t *testing.T, p *protocol.Protocol, endpointID string, in protocol.SignInput, signing string) *hookverifyv1.VerifyRequest {
	t.Helper()
	signed, err := protocol.SignDelivery(p, in, []string{signing})
	if err != nil {
		t.Fatal(err)
	}
	req := &hookverifyv1.VerifyRequest{EndpointId: endpointID, Body: signed.Body, Method: "POST", Url: signed.URL}
	for _, h := range signed.Headers {
		req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
	}
	return req
}
