package protocol

import (
	"testing"
	"time"
)

// The endpoint's tolerance replaces Sanity's 300 s default in both directions. The toolkit
// (sanity-io/webhook-toolkit) checks no window at all, so the window is hookverify's: a shorter
// one refuses a delivery the default would take, a longer one takes a delivery the default
// would refuse (a retry that reuses its first signature may need it).
func TestSanityEndpointToleranceOverridesDefault(t *testing.T) {
	t.Parallel()
	p := Sanity()
	keys := keysFor(t, p, sanitySecret)
	body := []byte(sanityVectorBody)
	old := signed(t, p, SignInput{Body: body, EventID: "msg-tol", Timestamp: fixedNow.Add(-60 * time.Second)}, sanitySecret)
	res, err := p.Verify(old, keys, Params{Now: fixedNow, Tolerance: 30 * time.Second})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", old)
	older := signed(t, p, SignInput{Body: body, EventID: "msg-tol", Timestamp: fixedNow.Add(-20 * time.Minute)}, sanitySecret)
	res, err = p.Verify(older, keys, Params{Now: fixedNow, Tolerance: time.Hour})
	checkOutcome(t, res, err, 0, "k0", older)
	if res.EventID != "msg-tol" {
		t.Fatalf("EventID = %q, want the idempotency-key", res.EventID)
	}
}
