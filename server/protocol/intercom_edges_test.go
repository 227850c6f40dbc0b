package protocol

import "testing"

// TestIntercomSignatureHeaderIsOneSignature: Intercom sends exactly one "sha1=<40 hex>" in
// X-Hub-Signature (signed-notifications reference in Intercom's v1.0 API docs, providers.md);
// it never sends a comma-separated list, so a value carrying a matching signature next to
// another one is malformed, not accepted on the strength of the matching half.
func TestIntercomSignatureHeaderIsOneSignature(t *testing.T) {
	t.Parallel()
	p := Intercom()
	body := ExampleBody(p, intercomNotifID)
	good := signed(t, p, SignInput{Body: body}, intercomSecret)
	sig := "sha1=" + hmacSHA1Hex(intercomSecret, string(body))
	other := "sha1=" + hmacSHA1Hex(intercomSecretNew, string(body))
	for _, v := range []string{sig + "," + other, other + "," + sig, other + ", " + sig} {
		req := withHeader(good, "X-Hub-Signature", v)
		res, err := p.Verify(req, keysFor(t, p, intercomSecret), Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
}
