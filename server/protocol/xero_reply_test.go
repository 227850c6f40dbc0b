package protocol

import "testing"

// TestXeroSuccessReplyHasNoBody: Xero's "Configuring your server" lists what it expects of
// every webhook response, Intent to Receive included: "It responds within 5 seconds with a
// 200 O.K status code", "There is no body in the response", and retries for 24 hours (then
// disables the webhook) when it does not get an acceptable response
// (https://developer.xero.com/documentation/webhooks/configuring-your-server). The default
// success reply carries a small JSON body, so Xero gets the reply it lists as unacceptable.
func TestXeroSuccessReplyHasNoBody(t *testing.T) {
	t.Parallel()
	r := Xero().SuccessReply
	if r == nil {
		t.Fatal("Xero has no SuccessReply, so deliveries get the default reply with a JSON body")
	}
	if r.Status != 200 || len(r.Body) != 0 {
		t.Fatalf("SuccessReply = %d %q, want 200 with no body", r.Status, r.Body)
	}
	for _, h := range r.Headers {
		if h.Name == "Set-Cookie" {
			t.Fatal("Xero wants no cookies in the response")
		}
	}
}
