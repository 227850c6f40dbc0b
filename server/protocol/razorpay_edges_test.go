package protocol

import "testing"

// TestRazorpaySignatureHeaderIsOneSignature: razorpay-go's VerifyWebhookSignature compares
// X-Razorpay-Signature, whole, with the hex HMAC-SHA256 of the body (providers.md); a value
// pairing the right signature with another one is malformed, not accepted on the strength of
// its matching half.
func TestRazorpaySignatureHeaderIsOneSignature(t *testing.T) {
	t.Parallel()
	p := Razorpay()
	good := signed(t, p, SignInput{Body: []byte(razorpayBody), EventID: razorpayEventID}, razorpaySecret)
	sig := hmacSHA256Hex(razorpaySecret, razorpayBody)
	other := hmacSHA256Hex(razorpaySecretNew, razorpayBody)
	for _, v := range []string{sig + "," + other, other + "," + sig, other + ", " + sig} {
		req := withHeader(good, "X-Razorpay-Signature", v)
		res, err := p.Verify(req, keysFor(t, p, razorpaySecret), Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
}

// TestRazorpaySecretMustBeExact: the webhook secret keys the HMAC byte for byte, so an empty
// secret or one with surrounding whitespace (a copy-paste slip) is refused when the endpoint is
// configured rather than making every delivery a mismatch.
func TestRazorpaySecretMustBeExact(t *testing.T) {
	t.Parallel()
	checkSecretsRefused(t, Razorpay(), "", " "+razorpaySecretNew, razorpaySecretNew+"\n")
}
