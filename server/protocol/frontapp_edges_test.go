package protocol

import (
	"strings"
	"testing"
	"time"
)

// TestFrontAppConfiguredTolerance: an endpoint's tolerance replaces the 300 s default in both
// directions.
func TestFrontAppConfiguredTolerance(t *testing.T) {
	t.Parallel()
	p := FrontApp()
	keys := keysFor(t, p, frontappVectorKey)
	req := frontappRequest(frontappVectorMs, frontappVectorSig, frontappVectorBody)
	signed := time.UnixMilli(1700000000000)
	for _, tc := range []struct {
		now        time.Time
		tol        time.Duration
		wantReason Reason
	}{
		{now: signed.Add(400 * time.Second), tol: 600 * time.Second},
		{now: signed.Add(-400 * time.Second), tol: 600 * time.Second},
		{now: signed.Add(61 * time.Second), tol: 60 * time.Second, wantReason: ReasonTimestampOutOfTolerance},
		{now: signed.Add(-61 * time.Second), tol: 60 * time.Second, wantReason: ReasonTimestampOutOfTolerance},
	} {
		res, err := p.Verify(req, keys, Params{Now: tc.now, Tolerance: tc.tol})
		wantKey := "k0"
		if tc.wantReason != 0 {
			wantKey = ""
		}
		checkOutcome(t, res, err, tc.wantReason, wantKey, req)
	}
}

// TestFrontAppChallengeEdges: a challenge of 256 visible ASCII characters, '~' included, is
// echoed; 257 is refused.
func TestFrontAppChallengeEdges(t *testing.T) {
	t.Parallel()
	p := FrontApp()
	keys := keysFor(t, p, frontappVectorKey)
	for _, challenge := range []string{strings.Repeat("c", 256), "abc~def"} {
		req := frontappRequest(frontappVectorMs, frontappVectorSig, frontappVectorBody, "x-front-challenge", challenge)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		if err != nil || res.Handshake == nil || string(res.Handshake.Body) != challenge {
			t.Fatalf("challenge %q = %+v, %v", challenge, res, err)
		}
	}
	req := frontappRequest(frontappVectorMs, frontappVectorSig, frontappVectorBody, "x-front-challenge", strings.Repeat("c", 257))
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMalformedPayload, "", req)
}
