package protocol

import "testing"

// A "k=v" signature header (Calendly, Paddle, WorkOS) whose every signature is genuine is
// still malformed when one element is not exactly key=value: a value holding a second '=', or
// an empty key. The element is not skipped as one of another scheme.
func TestKVSignatureHeaderRejectsElementNotKeyValue(t *testing.T) {
	t.Parallel()
	p := Calendly()
	keys := keysFor(t, p, calendlySecret)
	good := calendlyHeader(fixedNow.Unix(), calendlyBody, calendlySecret)
	if _, err := p.Verify(calendlyRequest(good, calendlyBody), keys, Params{Now: fixedNow}); err != nil {
		t.Fatalf("genuine delivery rejected: %v", err)
	}
	for _, v := range []string{good + ",x=a=b", good + ",=x", "=x," + good} {
		req := calendlyRequest(v, calendlyBody)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
}

// A "t=,v1=" header (Mux, Persona, Sanity) with an element whose key is empty is malformed,
// even beside a genuine signature.
func TestTVSignatureHeaderRejectsEmptyKey(t *testing.T) {
	t.Parallel()
	p := Mux()
	keys := keysFor(t, p, muxSecret)
	good := signed(t, p, SignInput{Body: muxExampleBody("evt-1"), Timestamp: fixedNow}, muxSecret)
	if _, err := p.Verify(good, keys, Params{Now: fixedNow}); err != nil {
		t.Fatalf("genuine delivery rejected: %v", err)
	}
	v := header(good, "Mux-Signature")
	for _, bad := range []string{v + ",=x", "=," + v} {
		req := withHeader(good, "Mux-Signature", bad)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
}
