package protocol

import (
	"testing"
	"time"
)

// Webflow's "Verifying Requests" says to reject requests older than 5 minutes: with no endpoint
// tolerance set, a signature 5 minutes old (or ahead) is accepted and one a millisecond beyond is
// out of tolerance.
func TestWebflowDefaultToleranceIsFiveMinutes(t *testing.T) {
	t.Parallel()
	p := Webflow()
	if p.DefaultTolerance != 5*time.Minute {
		t.Fatalf("DefaultTolerance = %v, want 5m", p.DefaultTolerance)
	}
	keys := keysFor(t, p, webflowSecret)
	for _, tc := range []struct {
		offset     time.Duration
		wantReason Reason
	}{
		{-5 * time.Minute, 0},
		{5 * time.Minute, 0},
		{-5*time.Minute - time.Millisecond, ReasonTimestampOutOfTolerance},
		{5*time.Minute + time.Millisecond, ReasonTimestampOutOfTolerance},
		{-6 * time.Minute, ReasonTimestampOutOfTolerance},
	} {
		req := signed(t, p, SignInput{Body: []byte(webflowVectorBody), Timestamp: fixedNow.Add(tc.offset)}, webflowSecret)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkOutcome(t, res, err, tc.wantReason, "k0", req)
	}
}
