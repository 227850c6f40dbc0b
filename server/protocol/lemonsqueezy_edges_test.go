package protocol

import "testing"

// TestLemonSqueezySignatureHeaderIsOneSignature: Lemon Squeezy's X-Signature is one hex
// HMAC-SHA256 of the body, compared whole (docs.lemonsqueezy.com/help/webhooks/signing-requests,
// providers.md); a value pairing the right signature with another one is malformed, not
// accepted on the strength of its matching half.
func TestLemonSqueezySignatureHeaderIsOneSignature(t *testing.T) {
	t.Parallel()
	p := LemonSqueezy()
	good := signed(t, p, SignInput{Body: []byte(lemonsqueezyBody)}, lemonsqueezySecret)
	sig := hmacSHA256Hex(lemonsqueezySecret, lemonsqueezyBody)
	other := hmacSHA256Hex(lemonsqueezySecretNew, lemonsqueezyBody)
	for _, v := range []string{sig + "," + other, other + "," + sig, other + ", " + sig} {
		req := withHeader(good, "X-Signature", v)
		res, err := p.Verify(req, keysFor(t, p, lemonsqueezySecret), Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
}
