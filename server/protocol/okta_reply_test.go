package protocol

import "testing"

// TestOktaSuccessReplyIsEmpty: Okta's event-hook contract says "Your external service's
// responses to Okta's ongoing event delivery POST requests should all be empty, and should
// have an HTTP status code of 200 (OK) or 204 (No Content)" (okta/okta-developer-docs
// docs/concepts/event-hooks/index.md, "Your Service's Responses to Event Delivery Requests").
// The default success reply carries a JSON body.
func TestOktaSuccessReplyIsEmpty(t *testing.T) {
	t.Parallel()
	r := Okta().SuccessReply
	if r == nil {
		t.Fatal("Okta has no SuccessReply, so deliveries get the default reply with a JSON body")
	}
	if (r.Status != 200 && r.Status != 204) || len(r.Body) != 0 {
		t.Fatalf("SuccessReply = %d %q, want 200 or 204 with no body", r.Status, r.Body)
	}
}
