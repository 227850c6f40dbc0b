package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

// TestTwilioSharedKeyDeliverySaysWhy: a delivery signed with a Twilio Webhook shared key
// carries a 32-byte HMAC-SHA256 in X-Twilio-Signature and names the setting in
// X-Twilio-Webhooks-Signature-Settings (twilio.com/docs/usage/webhooks/webhook-shared-keys).
// hookverify cannot verify it (no source says how the key is used), and it was rejected as
// "not the base64 of a 20-byte HMAC-SHA1", which sends an operator looking for corruption. The
// rejection is the same, its detail says what happened and what to do.
func TestTwilioSharedKeyDeliverySaysWhy(t *testing.T) {
	t.Parallel()
	mac := hmac.New(sha256.New, []byte("shared-key"))
	mac.Write([]byte("https://hooks.example.com/twilio"))
	req := &Request{Method: "POST", URL: "https://hooks.example.com/twilio", Body: []byte("A=1"), Headers: Headers{
		{Name: "X-Twilio-Signature", Value: base64.StdEncoding.EncodeToString(mac.Sum(nil))},
		{Name: "X-Twilio-Webhooks-Signature-Settings", Value: "key=,algorithm=HMAC_SHA256"},
	}}
	_, err := verifyTwilio(req, []Key{{ID: "k", Material: []byte("auth-token")}}, Params{})
	if ReasonOf(err) != ReasonMalformedSignature || !strings.Contains(err.Error(), "shared key") {
		t.Fatalf("got %v, want a malformed signature saying it is a Webhook shared key", err)
	}
	// Without that header the detail is as before.
	req.Headers = req.Headers[:1]
	if _, err := verifyTwilio(req, nil, Params{}); ReasonOf(err) != ReasonMalformedSignature || strings.Contains(err.Error(), "shared key") {
		t.Fatalf("got %v, want the plain malformed signature", err)
	}
}
