package protocol

import (
	"testing"
)

// The identity is the SHA-256 of the decoded notification XML, not of its base64 text.
func TestBraintreeIdentityIsTheDecodedXML(t *testing.T) {
	t.Parallel()
	p := Braintree()
	xmlBody := braintreeExampleBody("sub_1")
	req := braintreeSigned(t, string(xmlBody), braintreeVectorSecret)
	if got, want := eventIDOf(t, p, keysFor(t, p, braintreeVectorSecret), req, fixedNow), bodySHA256ID(xmlBody); got != want {
		t.Fatalf("event id %q, want %q", got, want)
	}
}

// A form with two bt_signature fields is not one Braintree sends: no single signature.
func TestBraintreeTwoSignatureFieldsAreRejected(t *testing.T) {
	t.Parallel()
	p := Braintree()
	req := braintreeSigned(t, string(braintreeExampleBody("sub_1")), braintreeVectorSecret)
	req = withBody(req, append(append([]byte(nil), req.Body...), "&bt_signature=x"...))
	res, err := p.Verify(req, keysFor(t, p, braintreeVectorSecret), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingSignature, "", req)
}

// A bt_payload shaped like a bt_challenge stays refused when a newline follows it (the
// newline-appended form is also tried as a signed message).
func TestBraintreeChallengeShapedPayloadWithNewlineIsMalformed(t *testing.T) {
	t.Parallel()
	p := Braintree()
	req := braintreeForm(braintreeChallengeRep, braintreeChallengeHex+"\n")
	res, err := p.Verify(req, keysFor(t, p, braintreeVectorSecret), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMalformedPayload, "", req)
}
