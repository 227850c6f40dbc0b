package protocol

import (
	"strings"
	"testing"
)

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

// TestTwilioFormIdentityCoversTheURL: Twilio signs the URL and the sorted parameters run
// together, so a replay (by a caller that supplies the URL, with no public_url set) that moves
// the URL's last bytes into the first parameter's name verifies under the original signature.
// It must keep the original's identity, or it is accepted and stored a second time, with the
// other parameters, and so the work they describe, intact.
func TestTwilioFormIdentityCoversTheURL(t *testing.T) {
	t.Parallel()
	p := Twilio()
	keys := keysFor(t, p, twilioToken)
	id := func(t *testing.T, req *Request) string {
		t.Helper()
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		if err != nil {
			t.Fatalf("Verify(%s): %v", req.URL, err)
		}
		return res.EventID
	}
	original := id(t, twilioRequest(twilioURL, twilioSig, twilioForm))
	// "...&bar=2" + "CallSid..." is signed as "...&bar=" + "2CallSid...".
	moved := twilioRequest(strings.TrimSuffix(twilioURL, "2"), twilioSig, strings.Replace(twilioForm, "CallSid=", "2CallSid=", 1))
	if got := id(t, moved); got != original {
		t.Fatalf("replay with bytes moved from the URL into a name: EventID = %q, want the original's %q", got, original)
	}
}
