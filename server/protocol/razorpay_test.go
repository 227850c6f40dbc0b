package protocol

import (
	"strings"
	"testing"
)

const (
	razorpaySecret    = "test_secret"
	razorpaySecretNew = "rzp_webhook_rotated_secret"
	razorpayEventID   = "KfkW1zE3Rhm3h4"
	razorpayBody      = `{"entity":"event","account_id":"acc_BFQ7uQEaa7j2z7","event":"payment.captured","contains":["payment"],"payload":{"payment":{"entity":{"id":"pay_DESlfW9H8K9uqM","amount":100}}},"created_at":1567674606}`
)

func TestRazorpayVerify(t *testing.T) {
	t.Parallel()
	p := Razorpay()
	in := SignInput{Body: []byte(razorpayBody), EventID: razorpayEventID}
	good := signed(t, p, in, razorpaySecret)
	indep := hmacSHA256Hex(razorpaySecret, razorpayBody)
	fx := signingFixture{
		p: p, secret: razorpaySecret, secretNew: razorpaySecretNew, in: in, wantEvent: razorpayEventID,
		sigHeader: "X-Razorpay-Signature",
		noID:      withoutHeader(good, "x-razorpay-event-id"),
		// razorpay-go utils_test.go: wrong length, non-hex and empty signatures are refused.
		malformed: []string{"abc123", "not-valid-hex-chars!@#$", strings.ToUpper(indep), "sha256=" + indep},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "X-Razorpay-Signature", indep), keys: []string{razorpaySecret}, wantKey: "k0", wantEvent: razorpayEventID},
		// razorpay-go utils_test.go TestVerifyWebhookSignature_TamperedValidHex.
		verifyCase{name: "well-formed tampered hex", req: withHeader(good, "X-Razorpay-Signature", strings.Repeat("ab", 32)), keys: []string{razorpaySecret}, wantReason: ReasonSignatureMismatch},
	)
	runVerifyCases(t, p, cs)
}

// TestRazorpaySDKCase mirrors razorpay-go utils/utils_test.go TestVerifyWebhookSignature_Valid
// (body "test body", secret "test_secret", hex HMAC-SHA256; the SDK computes the expected value
// at run time, so the constant here is openssl's:
// printf 'test body' | openssl dgst -sha256 -hmac test_secret).
func TestRazorpaySDKCase(t *testing.T) {
	t.Parallel()
	p := Razorpay()
	req := &Request{Method: "POST", Body: []byte("test body"), Headers: Headers{
		{Name: "X-Razorpay-Signature", Value: razorpayOpenSSL}, {Name: "x-razorpay-event-id", Value: razorpayEventID},
	}}
	res, err := p.Verify(req, keysFor(t, p, "test_secret"), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	h, err := p.Sign(SignInput{Body: []byte("test body"), EventID: razorpayEventID}, []string{"test_secret"})
	if err != nil || h[0].Value != razorpayOpenSSL {
		t.Fatalf("Sign = %+v, %v", h, err)
	}
}

func FuzzRazorpaySignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Razorpay(), razorpaySecret, "X-Razorpay-Signature",
		SignInput{Body: []byte(razorpayBody), EventID: razorpayEventID}, Params{Now: fixedNow},
		"", "abc123", "not-valid-hex-chars!@#$")
}

const razorpayOpenSSL = "7ac01dae8a2ac188f7c08c26b22407ca3034974b984130f1664f2ba56d6a3c82"
