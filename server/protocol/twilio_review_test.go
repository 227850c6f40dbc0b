package protocol

import "testing"

// TestTwilioURLIdentityIgnoresPortVariants: a parameterless (GET) callback verifies under the
// URL with or without a port (the SDKs' tolerance), so a replay that only adds or changes the
// port carries the same valid signature and must keep the original's identity, to be answered
// DUPLICATE rather than stored again.
func TestTwilioURLIdentityIgnoresPortVariants(t *testing.T) {
	t.Parallel()
	p := Twilio()
	keys := keysFor(t, p, twilioToken)
	const u = "https://example.com/voice?CallSid=CA1&CallStatus=ringing"
	sig := twilioSignFor(t, u, "", twilioToken)
	id := func(t *testing.T, url string) string {
		t.Helper()
		res, err := p.Verify(&Request{Method: "GET", URL: url, Headers: Headers{{Name: "X-Twilio-Signature", Value: sig}}}, keys, Params{Now: fixedNow})
		if err != nil {
			t.Fatalf("Verify(%s): %v", url, err)
		}
		return res.EventID
	}
	want := id(t, u)
	for _, replay := range []string{
		"https://example.com:443/voice?CallSid=CA1&CallStatus=ringing",
		"https://example.com:8443/voice?CallSid=CA1&CallStatus=ringing",
		"https://example.com:/voice?CallSid=CA1&CallStatus=ringing",
	} {
		if got := id(t, replay); got != want {
			t.Errorf("replay at %s: EventID = %q, want the original's %q", replay, got, want)
		}
	}
}
