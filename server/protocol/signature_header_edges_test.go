package protocol

import (
	"testing"
	"time"
)

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

// WorkOS signs its timestamp in milliseconds: a delivery exactly the tolerance old or ahead of
// Now is accepted (boundaries included, in both directions), one a millisecond beyond is not.
func TestWorkOSMillisecondToleranceBoundariesIncluded(t *testing.T) {
	t.Parallel()
	p := WorkOS()
	signing, keys := exampleKeys(t, p)
	now := fixedNow.Add(700 * time.Millisecond)
	tol := p.DefaultTolerance
	for _, c := range []struct {
		label  string
		at     time.Time
		reject bool
	}{
		{"exactly the tolerance old", now.Add(-tol), false},
		{"exactly the tolerance ahead", now.Add(tol), false},
		{"a millisecond too old", now.Add(-tol - time.Millisecond), true},
		{"a millisecond too far ahead", now.Add(tol + time.Millisecond), true},
	} {
		req := signed(t, p, SignInput{Body: ExampleBody(p, "evt_ms"), EventID: "evt_ms", Timestamp: c.at}, signing)
		_, err := p.Verify(req, keys, Params{Now: now, Tolerance: tol})
		switch {
		case c.reject && ReasonOf(err) != ReasonTimestampOutOfTolerance:
			t.Errorf("%s: got %v, want timestamp out of tolerance", c.label, err)
		case !c.reject && err != nil:
			t.Errorf("%s: got %v, want accepted", c.label, err)
		}
	}
}
