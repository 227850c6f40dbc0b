package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"testing"
)

// Mailgun's "Securing Webhooks" page: "When an event occurs for a domain belonging to a
// subaccount, the signature payload will include a parent-signature field to identify the
// primary account. This is so that the receiving server does not have to account for each
// individual subaccount signature and can instead reference one primary/parent signature",
// parent-signature being "Same as signature; only included when event happens on a
// subaccount" (https://documentation.mailgun.com/docs/mailgun/user-manual/webhooks/securing-webhooks).
// An endpoint configured with the primary account's signing key must therefore accept a
// subaccount's event by its parent-signature.
func TestMailgunParentSignature(t *testing.T) {
	t.Parallel()
	p := Mailgun()
	const parentKey, subKey = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	ts := strconv.FormatInt(fixedNow.Unix(), 10)
	mac := func(key string) string {
		return hex.EncodeToString(hmacSum(sha256.New, []byte(key), mailgunMessage(ts, mailgunToken)))
	}
	body := func(sig, parent string) []byte {
		return []byte(`{"signature":{"token":` + mailgunQ(mailgunToken) + `,"timestamp":` + mailgunQ(ts) +
			`,"signature":` + mailgunQ(sig) + `,"parent-signature":` + mailgunQ(parent) + `},"event-data":{"id":"evt-1","event":"delivered"}}`)
	}
	tests := []struct {
		name       string
		body       []byte
		keys       []string
		wantReason Reason
		wantKey    string
	}{
		{name: "primary account key verifies the parent-signature", body: body(mac(subKey), mac(parentKey)), keys: []string{parentKey}, wantKey: "k0"},
		{name: "subaccount key still verifies the signature", body: body(mac(subKey), mac(parentKey)), keys: []string{subKey}, wantKey: "k0"},
		{name: "neither matches", body: body(mac(subKey), mac(parentKey)), keys: []string{mailgunKey}, wantReason: ReasonSignatureMismatch},
		{name: "tampered parent-signature", body: body(mac(subKey), mac(parentKey+"x")), keys: []string{parentKey}, wantReason: ReasonSignatureMismatch},
		{name: "malformed parent-signature, signature matches", body: body(mac(subKey), "zz"), keys: []string{subKey}, wantKey: "k0"},
		{name: "malformed parent-signature, nothing matches", body: body(mac(subKey), "zz"), keys: []string{parentKey}, wantReason: ReasonMalformedSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := &Request{Method: "POST", URL: "https://hooks.example.com/mailgun", Body: tc.body}
			res, err := p.Verify(req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, req)
			if err == nil && res.EventID != mailgunToken {
				t.Fatalf("EventID = %q, want the signed token", res.EventID)
			}
		})
	}
}
