package protocol

import (
	"testing"
	"time"
)

// With no configured tolerance, a delivery signed a minute ago (well inside the 300 s default,
// given in seconds, not milliseconds) verifies.
func TestRecurlyDefaultToleranceIsSeconds(t *testing.T) {
	t.Parallel()
	p := Recurly()
	body := `{"id":"o1","object_type":"account","event_type":"created","event_time":"2026-01-01T00:00:00Z"}`
	req := signed(t, p, SignInput{Body: []byte(body), Timestamp: fixedNow.Add(-time.Minute)}, recurlySecret)
	res, err := p.Verify(req, keysFor(t, p, recurlySecret), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
}
