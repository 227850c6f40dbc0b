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
	checkDefaultToleranceIncludesItsBound(t, Persona(), personaSecret, SignInput{Body: personaExampleBody("evt_tol")}, 300*time.Second)
}

// The endpoint's tolerance replaces the 300 s default in both directions, for the set that
// authenticates: a shorter one refuses a delivery the default would take, a longer one takes a
// delivery the default would refuse.
func TestPersonaEndpointToleranceOverridesDefault(t *testing.T) {
	t.Parallel()
	checkEndpointToleranceReplacesDefault(t, Persona(), personaSecret, SignInput{Body: personaExampleBody("evt_tol")})
}
