package protocol

import (
	"testing"
	"time"
)

// Without an endpoint tolerance, Persona's window is 300 seconds (personaDefaultTolerance; the
// documented t is "the unix time that the request was sent"), boundary included: a delivery
// signed exactly 300 s away is accepted, 301 s is out of tolerance, in either direction.
func TestPersonaDefaultToleranceIs300Seconds(t *testing.T) {
	t.Parallel()
	p := Persona()
	keys := keysFor(t, p, personaSecret)
	body := personaExampleBody("evt_tol")
	for _, tc := range []struct {
		name       string
		offset     time.Duration
		wantReason Reason
	}{
		{name: "300 s old", offset: -300 * time.Second},
		{name: "300 s ahead", offset: 300 * time.Second},
		{name: "301 s old", offset: -301 * time.Second, wantReason: ReasonTimestampOutOfTolerance},
		{name: "301 s ahead", offset: 301 * time.Second, wantReason: ReasonTimestampOutOfTolerance},
	} {
		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow.Add(tc.offset)}, personaSecret)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkOutcome(t, res, err, tc.wantReason, "k0", req)
	}
}

// The endpoint's tolerance replaces the 300 s default in both directions, for the set that
// authenticates: a shorter one refuses a delivery the default would take, a longer one takes a
// delivery the default would refuse.
func TestPersonaEndpointToleranceOverridesDefault(t *testing.T) {
	t.Parallel()
	p := Persona()
	keys := keysFor(t, p, personaSecret)
	body := personaExampleBody("evt_tol")
	old := signed(t, p, SignInput{Body: body, Timestamp: fixedNow.Add(-60 * time.Second)}, personaSecret)
	res, err := p.Verify(old, keys, Params{Now: fixedNow, Tolerance: 30 * time.Second})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", old)
	older := signed(t, p, SignInput{Body: body, Timestamp: fixedNow.Add(-20 * time.Minute)}, personaSecret)
	res, err = p.Verify(older, keys, Params{Now: fixedNow, Tolerance: time.Hour})
	checkOutcome(t, res, err, 0, "k0", older)
}
