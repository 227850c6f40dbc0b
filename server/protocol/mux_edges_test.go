package protocol

import (
	"strings"
	"testing"
	"time"
)

// Without an endpoint tolerance, Mux's window is 300 seconds, boundary included: mux-node-sdk
// src/webhooks/resources/verify_header.ts (DEFAULT_TOLERANCE = 300) rejects only when
// now - t > tolerance. A delivery signed exactly 300 s ago (or ahead) is accepted, 301 s is stale.
func TestMuxDefaultToleranceIs300Seconds(t *testing.T) {
	t.Parallel()
	checkDefaultToleranceIncludesItsBound(t, Mux(), muxSecret, SignInput{Body: muxExampleBody("evt-tol")}, 300*time.Second)
}

// The endpoint's tolerance replaces the 300 s default in both directions: a shorter one refuses
// a delivery the default would take, a longer one takes a delivery the default would refuse.
func TestMuxEndpointToleranceOverridesDefault(t *testing.T) {
	t.Parallel()
	checkEndpointToleranceReplacesDefault(t, Mux(), muxSecret, SignInput{Body: muxExampleBody("evt-tol")})
}

// Mux-Signature carries one t and its v1 values, read as mux-node-sdk's parseHeader does (split
// on ",", then "="); Mux never sends Persona-style space-separated sets. A second "t=...,v1=..."
// after a space is therefore not a set of its own: the first v1 value becomes "<hex> t" (not 64
// hex digits, so malformed) and the last v1 is checked against the first t, so a signature made
// for that second t does not authenticate. Nor is a leading space trimmed away.
func TestMuxSignatureHeaderIsOneSet(t *testing.T) {
	t.Parallel()
	p := Mux()
	keys := keysFor(t, p, muxSecret)
	body := muxExampleBody("evt-set")
	fresh := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, muxSecret)
	freshHdr := header(fresh, "Mux-Signature")
	for _, tc := range []struct {
		name, value string
		wantReason  Reason
	}{
		{name: "second space-separated set", value: "t=1699990000,v1=" + strings.Repeat("ab", 32) + " " + freshHdr, wantReason: ReasonMalformedSignature},
		{name: "leading space", value: " " + freshHdr, wantReason: ReasonMalformedSignature},
	} {
		req := withHeader(fresh, "Mux-Signature", tc.value)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkOutcome(t, res, err, tc.wantReason, "", req)
	}
}
