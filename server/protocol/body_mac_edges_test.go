package protocol

import (
	"errors"
	"testing"
)

// A provider that sends its event id in a header (Bitbucket, PagerDuty, Razorpay, Sentry)
// cannot be signed for without one: Sign returns ErrSignNeedsEventID rather than a delivery
// whose id header is empty, which Verify would reject.
func TestSignWithEventIDHeaderNeedsEventID(t *testing.T) {
	t.Parallel()
	for _, p := range []*Protocol{Bitbucket(), PagerDuty(), Razorpay(), Sentry()} {
		signing, _ := exampleKeys(t, p)
		_, err := p.Sign(SignInput{Body: ExampleBody(p, "x"), Timestamp: fixedNow}, []string{signing})
		if !errors.Is(err, ErrSignNeedsEventID) {
			t.Errorf("%s: Sign without an EventID: err = %v, want ErrSignNeedsEventID", p.Name, err)
		}
	}
}
