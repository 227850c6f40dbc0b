package protocol

import (
	"strings"
	"testing"
)

// Checkout.com publishes no vector; the docs describe the algorithm
// (https://www.checkout.com/docs/workflows). checkoutVectorSig was computed independently:
// printf '%s' '{"id":"evt_1"}' | openssl dgst -sha256 -hmac 'cko-signature-key-1'
const (
	checkoutSecret     = "cko-signature-key-1"
	checkoutSecret2    = "cko-signature-key-2"
	checkoutVectorBody = `{"id":"evt_1"}`
	checkoutVectorSig  = "189d0b6d619aaaa76eda261f1ad92a842a84e75277f60e57bba6e22cfc90b444"
)

func TestCheckoutVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Checkout(), secret: checkoutSecret, secret2: checkoutSecret2,
		sigHeader: "Cko-Signature", eventID: "evt_az5sblvku4ge3dwpztvyizgcau", wantEventID: "evt_az5sblvku4ge3dwpztvyizgcau",
		malformed: []string{"", "zz", strings.ToUpper(checkoutVectorSig), "sha256=" + checkoutVectorSig, checkoutVectorSig + "00"},
		noIdentity: func(t *testing.T) *Request {
			return signed(t, Checkout(), SignInput{Body: []byte(`{"type":"payment_approved"}`)}, checkoutSecret)
		},
	}.run(t)
}

func TestCheckoutRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Checkout()
	req := &Request{Method: "POST", Headers: Headers{{Name: "Cko-Signature", Value: checkoutVectorSig}}, Body: []byte(checkoutVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, checkoutSecret), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "evt_1" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	h, err := p.Sign(SignInput{Body: []byte(checkoutVectorBody)}, []string{checkoutSecret})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("Cko-Signature"); got != checkoutVectorSig {
		t.Fatalf("Sign = %q, want %q", got, checkoutVectorSig)
	}
	for _, body := range []string{`[]`, `not json`} {
		req := signed(t, p, SignInput{Body: []byte(body)}, checkoutSecret)
		res, err := p.Verify(req, keysFor(t, p, checkoutSecret), Params{})
		checkOutcome(t, res, err, ReasonMalformedPayload, "", req)
	}
	checkSecretsRefused(t, p, "", " cko-x9")
}

func FuzzCheckoutSignatureHeader(f *testing.F) {
	f.Add(checkoutVectorSig, []byte(checkoutVectorBody), uint16(7), byte('g'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Checkout(), checkoutSecret, "Cko-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}
