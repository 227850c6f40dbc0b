package protocol

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"hash"
	"net/url"
	"strings"
	"testing"
)

// The published vectors below come from the official SDKs' test suites, recomputed
// independently (Python hmac/hashlib) before being pinned here:
//   - twilio/twilio-python tests/unit/test_request_validator.py (token "12345", URL
//     https://mycompany.com/myapp.php?foo=1&bar=2): RSOYDt4T1cUTdK1PDd93/VVr8B8= (five params),
//     kvajT1Ptam85bY51eRf/AJRuM3w= (signed with :443), 0ZXoZLH/DfblKGATFgpif+LLRf4= (http, signed
//     with :80), Zmvh+3yNM1Phv2jhDCwEM3q5ebU= (http, signed with :1234), IK+Dwps556ElfBT0I3Rgjkr1wJU=
//     (repeated Digits), a9nBmqA0ju/hNViExpshrM61xv4= (JSON body via bodySHA256).
//   - twilio/twilio-go client/request_validator_test.go: vOEb5UThFn24KEfnOFLQY2AE5FY= (Reason and
//     ReasonConferenceEnded sorted by name), 95+Bu0JVPi0r/SsESZCVf0dWAjw= (the same sorted as
//     concatenated strings: must fail), n2xBNyzSW7rfYStDtOFiFMv7qNo= (http),
//     y77kIzt2vzLz71DgmJGsen2scGs= (bodySHA256 as the only query parameter).
const (
	twilioToken    = "12345"
	twilioTokenNew = "0123456789abcdef0123456789abcdef"
	twilioURL      = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twilioForm     = "CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212"
	twilioSig      = "RSOYDt4T1cUTdK1PDd93/VVr8B8="
	twilioJSON     = `{"property": "value", "boolean": true}`
	twilioJSONHash = "0a1ff7634d9ab3b95db5c9a2dfe9416e41502b283a80c7cf19632632f96e6620"
)

func twilioRequest(u, sig, body string) *Request {
	return &Request{Method: "POST", URL: u, Headers: Headers{{Name: "X-Twilio-Signature", Value: sig}}, Body: []byte(body)}
}

// twilioSignFor signs body for u with the secret through Sign.
func twilioSignFor(t testing.TB, u, body, secret string) string {
	t.Helper()
	h, err := Twilio().Sign(SignInput{Body: []byte(body), URL: u, Method: "POST"}, []string{secret})
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return header(&Request{Headers: h}, "X-Twilio-Signature")
}

// twilioRawSig is the signature of the string s alone, computed without Sign's checks.
func twilioRawSig(s, secret string) string {
	return base64.StdEncoding.EncodeToString(hmacSum(sha1.New, []byte(secret), func(h hash.Hash) { h.Write([]byte(s)) }))
}

func TestTwilioVerify(t *testing.T) {
	t.Parallel()
	p := Twilio()
	httpURL := strings.Replace(twilioURL, "https", "http", 1)
	goForm := twilioForm + "&ReasonConferenceEnded=test&Reason=Participant"
	jsonURL := twilioURL + "&bodySHA256=" + twilioJSONHash
	good := twilioSignFor(t, twilioURL, twilioForm, twilioToken)
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
	}{
		{name: "accepted (twilio-python vector)", req: twilioRequest(twilioURL, twilioSig, twilioForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "our Sign reproduces the vector", req: twilioRequest(twilioURL, good, twilioForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "params in another order", req: twilioRequest(twilioURL, twilioSig, "To=%2B18005551212&Digits=1234&CallSid=CA1234567890ABCDE&From=%2B14158675309&Caller=%2B14158675309"), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "body tampered by one trailing space", req: twilioRequest(twilioURL, twilioSig, twilioForm+" "), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "param value changed", req: twilioRequest(twilioURL, twilioSig, strings.Replace(twilioForm, "1234&", "1235&", 1)), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "param added", req: twilioRequest(twilioURL, twilioSig, twilioForm+"&Extra=1"), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "query changed", req: twilioRequest(strings.Replace(twilioURL, "bar=2", "bar=3", 1), twilioSig, twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "path changed", req: twilioRequest(strings.Replace(twilioURL, "myapp", "other", 1), twilioSig, twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "scheme changed", req: twilioRequest(httpURL, twilioSig, twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: twilioRequest(twilioURL, twilioSig, twilioForm), keys: []string{"54321"}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: twilioRequest(twilioURL, twilioSig, twilioForm), wantReason: ReasonSignatureMismatch},
		{name: "rotation: either token authenticates, first", req: twilioRequest(twilioURL, twilioSig, twilioForm), keys: []string{twilioToken, twilioTokenNew}, wantKey: "k0"},
		{name: "rotation: either token authenticates, second", req: twilioRequest(twilioURL, twilioSig, twilioForm), keys: []string{twilioTokenNew, twilioToken}, wantKey: "k1"},
		{name: "missing header", req: &Request{Method: "POST", URL: twilioURL, Body: []byte(twilioForm)}, keys: []string{twilioToken}, wantReason: ReasonMissingSignature},
		{name: "header name case-insensitive", req: &Request{URL: twilioURL, Headers: Headers{{Name: "x-twilio-signature", Value: twilioSig}}, Body: []byte(twilioForm)}, keys: []string{twilioToken}, wantKey: "k0"},
		{name: "empty header", req: twilioRequest(twilioURL, "", twilioForm), keys: []string{twilioToken}, wantReason: ReasonMalformedSignature},
		{name: "not base64", req: twilioRequest(twilioURL, "RSOYDt4T1cUTdK1PDd93/VVr8B8!", twilioForm), keys: []string{twilioToken}, wantReason: ReasonMalformedSignature},
		{name: "unpadded", req: twilioRequest(twilioURL, strings.TrimSuffix(twilioSig, "="), twilioForm), keys: []string{twilioToken}, wantReason: ReasonMalformedSignature},
		{name: "hex instead of base64", req: twilioRequest(twilioURL, strings.Repeat("ab", 20), twilioForm), keys: []string{twilioToken}, wantReason: ReasonMalformedSignature},
		{name: "SHA-256 sized signature", req: twilioRequest(twilioURL, strings.Repeat("A", 43)+"=", twilioForm), keys: []string{twilioToken}, wantReason: ReasonMalformedSignature},
		{name: "two signatures in one header", req: twilioRequest(twilioURL, twilioSig+","+twilioSig, twilioForm), keys: []string{twilioToken}, wantReason: ReasonMalformedSignature},
		{name: "no URL", req: twilioRequest("", twilioSig, twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "relative URL", req: twilioRequest("/myapp.php?foo=1&bar=2", twilioSig, twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "ftp URL", req: twilioRequest("ftp://mycompany.com/myapp.php?foo=1&bar=2", twilioSig, twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "bad percent-encoding in body", req: twilioRequest(twilioURL, twilioSig, twilioForm+"&Body=%zz"), keys: []string{twilioToken}, wantReason: ReasonMalformedPayload},

		// Ports: signed without a port, with the default port, or with another port.
		{name: "port: https signed with :443, URL without (python vector)", req: twilioRequest(twilioURL, "kvajT1Ptam85bY51eRf/AJRuM3w=", twilioForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "port: http signed with :80, URL without (python vector)", req: twilioRequest(httpURL, "0ZXoZLH/DfblKGATFgpif+LLRf4=", twilioForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "port: signed without, URL with :443", req: twilioRequest(strings.Replace(twilioURL, ".com", ".com:443", 1), twilioSig, twilioForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "port: signed without, URL with :1234 (SDKs strip any port)", req: twilioRequest(strings.Replace(twilioURL, ".com", ".com:1234", 1), twilioSig, twilioForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "port: http signed with :1234, URL with :1234 (python vector)", req: twilioRequest(strings.Replace(httpURL, ".com", ".com:1234", 1), "Zmvh+3yNM1Phv2jhDCwEM3q5ebU=", twilioForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "port: signed with :1234, URL without", req: twilioRequest(httpURL, "Zmvh+3yNM1Phv2jhDCwEM3q5ebU=", twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "port: https signed with :80 is not a default variant", req: twilioRequest(twilioURL, twilioSignFor(t, "https://mycompany.com:80/myapp.php?foo=1&bar=2", twilioForm, twilioToken), twilioForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},

		// Repeated names and sorting.
		{name: "repeated names sorted by value (python vector)", req: twilioRequest(twilioURL, "IK+Dwps556ElfBT0I3Rgjkr1wJU=", "Sid=CA123&SidAccount=AC123&Digits=5678&Digits=1234"), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "repeated identical pair counts once (node and python dedupe)", req: twilioRequest(twilioURL, twilioSig, twilioForm+"&Digits=1234"), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "names sorted by name, not by name+value (twilio-go vector)", req: twilioRequest(twilioURL, "vOEb5UThFn24KEfnOFLQY2AE5FY=", goForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "sorted as concatenated strings is wrong (twilio-go vector)", req: twilioRequest(twilioURL, "95+Bu0JVPi0r/SsESZCVf0dWAjw=", goForm), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "http, twilio-go vector", req: twilioRequest(httpURL, "n2xBNyzSW7rfYStDtOFiFMv7qNo=", goForm), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "blank values are signed", req: twilioRequest(twilioURL, twilioSignFor(t, twilioURL, "Body=&From=x", twilioToken), "Body=&From=x"), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "blank value dropped", req: twilioRequest(twilioURL, twilioSignFor(t, twilioURL, "Body=&From=x", twilioToken), "From=x"), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},

		// JSON bodies via bodySHA256.
		{name: "bodySHA256 (python and go vector)", req: twilioRequest(jsonURL, "a9nBmqA0ju/hNViExpshrM61xv4=", twilioJSON), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "bodySHA256 only parameter (twilio-go vector)", req: twilioRequest("https://mycompany.com/myapp.php?bodySHA256="+twilioJSONHash, "y77kIzt2vzLz71DgmJGsen2scGs=", twilioJSON), keys: []string{twilioToken}, wantKey: "k0"},
		{name: "bodySHA256: body tampered by one trailing space", req: twilioRequest(jsonURL, "a9nBmqA0ju/hNViExpshrM61xv4=", twilioJSON+" "), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "bodySHA256: empty body", req: twilioRequest(jsonURL, "a9nBmqA0ju/hNViExpshrM61xv4=", ""), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "bodySHA256: hash swapped along with the signature needs the key", req: twilioRequest(twilioURL+"&bodySHA256="+strings.Repeat("0", 64), "a9nBmqA0ju/hNViExpshrM61xv4=", twilioJSON), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "bodySHA256: uppercase hash is not what Twilio sends", req: twilioRequest(twilioURL+"&bodySHA256="+strings.ToUpper(twilioJSONHash), twilioRawSig(twilioURL+"&bodySHA256="+strings.ToUpper(twilioJSONHash), twilioToken), twilioJSON), keys: []string{twilioToken}, wantReason: ReasonSignatureMismatch},
		{name: "bodySHA256: wrong secret", req: twilioRequest(jsonURL, "a9nBmqA0ju/hNViExpshrM61xv4=", twilioJSON), keys: []string{"54321"}, wantReason: ReasonSignatureMismatch},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID == "" {
				t.Fatal("no event id")
			}
		})
	}
}

func TestTwilioIdentity(t *testing.T) {
	t.Parallel()
	p := Twilio()
	keys := keysFor(t, p, twilioToken)
	id := func(t *testing.T, req *Request) string { return eventIDOf(t, p, keys, req, fixedNow) }
	canon := "CallSidCA1234567890ABCDECaller+14158675309Digits1234From+14158675309To+18005551212"
	sum := sha256.Sum256([]byte(twilioURL + canon))
	t.Run("form: hash of the signed URL and parameter string", func(t *testing.T) {
		t.Parallel()
		if got, want := id(t, twilioRequest(twilioURL, twilioSig, twilioForm)), "signed-sha256:"+hex.EncodeToString(sum[:]); got != want {
			t.Fatalf("EventID = %q, want %q", got, want)
		}
	})
	t.Run("form: reordered or re-encoded params keep the identity", func(t *testing.T) {
		t.Parallel()
		a := id(t, twilioRequest(twilioURL, twilioSig, twilioForm))
		b := id(t, twilioRequest(twilioURL, twilioSig, "To=%2B18005551212&Digits=1234&CallSid=CA1234567890ABCDE&From=%2B14158675309&Caller=%2B14158675309&Digits=1234"))
		if a != b {
			t.Fatalf("identities differ: %q vs %q", a, b)
		}
	})
	t.Run("form: the ambiguous split Twilio signs alike gets the same identity", func(t *testing.T) {
		t.Parallel()
		// "Digits=1234" and "Digit=s1234" sign the same string, so a replay cannot dodge dedup.
		forged := strings.Replace(twilioForm, "Digits=1234", "Digit=s1234", 1)
		if a, b := id(t, twilioRequest(twilioURL, twilioSig, twilioForm)), id(t, twilioRequest(twilioURL, twilioSig, forged)); a != b {
			t.Fatalf("identities differ: %q vs %q", a, b)
		}
	})
	t.Run("form: bytes moved from the URL into a parameter's name keep the identity", func(t *testing.T) {
		t.Parallel()
		// Twilio signs the URL and the sorted parameters run together, so a replay (by a caller
		// that supplies the URL, with no public_url set) that moves the URL's last bytes into
		// the first parameter's name verifies under the original signature; with the other
		// parameters intact, a new identity would have their work done twice.
		// "...&bar=2" + "CallSid..." is signed as "...&bar=" + "2CallSid...".
		moved := twilioRequest(strings.TrimSuffix(twilioURL, "2"), twilioSig, strings.Replace(twilioForm, "CallSid=", "2CallSid=", 1))
		if a, b := id(t, twilioRequest(twilioURL, twilioSig, twilioForm)), id(t, moved); a != b {
			t.Fatalf("identities differ: %q vs %q", a, b)
		}
	})
	t.Run("GET: the URL with or without a port keeps the identity", func(t *testing.T) {
		t.Parallel()
		// A parameterless callback verifies under the URL with or without a port (the SDKs'
		// tolerance), so a replay that only adds or changes the port carries the same valid
		// signature and must keep the original's identity.
		const u = "https://example.com/voice?CallSid=CA1&CallStatus=ringing"
		sig := twilioSignFor(t, u, "", twilioToken)
		get := func(url string) *Request {
			return &Request{Method: "GET", URL: url, Headers: Headers{{Name: "X-Twilio-Signature", Value: sig}}}
		}
		want := id(t, get(u))
		for _, replay := range []string{
			"https://example.com:443/voice?CallSid=CA1&CallStatus=ringing",
			"https://example.com:8443/voice?CallSid=CA1&CallStatus=ringing",
			"https://example.com:/voice?CallSid=CA1&CallStatus=ringing",
		} {
			if got := id(t, get(replay)); got != want {
				t.Errorf("replay at %s: EventID = %q, want the original's %q", replay, got, want)
			}
		}
	})
	t.Run("form: the unsigned idempotency header is ignored", func(t *testing.T) {
		t.Parallel()
		req := twilioRequest(twilioURL, twilioSig, twilioForm)
		a := id(t, withHeader(req, "I-Twilio-Idempotency-Token", "one"))
		b := id(t, withHeader(req, "I-Twilio-Idempotency-Token", "two"))
		if a != b {
			t.Fatalf("identity follows the unsigned header: %q vs %q", a, b)
		}
	})
	t.Run("different events differ", func(t *testing.T) {
		t.Parallel()
		other := strings.Replace(twilioForm, "1234&", "9999&", 1)
		if id(t, twilioRequest(twilioURL, twilioSig, twilioForm)) == id(t, twilioRequest(twilioURL, twilioSignFor(t, twilioURL, other, twilioToken), other)) {
			t.Fatal("two events share an identity")
		}
	})
	t.Run("JSON: hash of the raw body", func(t *testing.T) {
		t.Parallel()
		got := id(t, twilioRequest(twilioURL+"&bodySHA256="+twilioJSONHash, "a9nBmqA0ju/hNViExpshrM61xv4=", twilioJSON))
		if want := "body-sha256:" + twilioJSONHash; got != want {
			t.Fatalf("EventID = %q, want %q", got, want)
		}
	})
	t.Run("no parameters: hash of the URL", func(t *testing.T) {
		t.Parallel()
		u := "https://example.com/voice?CallSid=CA1&CallStatus=ringing"
		usum := sha256.Sum256([]byte(u))
		got := id(t, &Request{Method: "GET", URL: u, Headers: Headers{{Name: "X-Twilio-Signature", Value: twilioSignFor(t, u, "", twilioToken)}}})
		if want := "url-sha256:" + hex.EncodeToString(usum[:]); got != want {
			t.Fatalf("EventID = %q, want %q", got, want)
		}
	})
}

func TestTwilioURLVariants(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"https://a.com/x?y=1", []string{"https://a.com/x?y=1", "https://a.com:443/x?y=1"}},
		{"http://a.com", []string{"http://a.com", "http://a.com:80"}},
		{"https://a.com:443/x", []string{"https://a.com/x", "https://a.com:443/x"}},
		{"https://a.com:8443?q", []string{"https://a.com?q", "https://a.com:8443?q"}},
		{"https://u:p@a.com/x", []string{"https://u:p@a.com/x", "https://u:p@a.com:443/x"}},
		{"https://[::1]:9/x", []string{"https://[::1]/x", "https://[::1]:9/x"}},
		// twilio-node's addPort and twilio-python's add_port take a bare ":" for a port.
		{"https://a.com:/x", []string{"https://a.com/x", "https://a.com:/x"}},
		{"http://[::1]:?q", []string{"http://[::1]?q", "http://[::1]:?q"}},
		{"HTTPS://a.com/x#rc=2", []string{"HTTPS://a.com/x#rc=2", "HTTPS://a.com:443/x#rc=2"}},
		{"https:///x", nil},
		{"https://[::1/x", nil},
		{"mailto:a@b.c", nil},
		{"", nil},
	} {
		got, ok := twilioURLVariants(tc.in)
		if ok != (tc.want != nil) || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("twilioURLVariants(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
}

func TestTwilioSign(t *testing.T) {
	t.Parallel()
	p := Twilio()
	t.Run("reproduces the bodySHA256 vector", func(t *testing.T) {
		t.Parallel()
		if got := twilioSignFor(t, twilioURL+"&bodySHA256="+twilioJSONHash, twilioJSON, twilioToken); got != "a9nBmqA0ju/hNViExpshrM61xv4=" {
			t.Fatalf("Sign = %q", got)
		}
	})
	t.Run("sends the idempotency token", func(t *testing.T) {
		t.Parallel()
		h, err := p.Sign(SignInput{Body: []byte(twilioForm), URL: twilioURL, EventID: "idem-1"}, []string{twilioToken, twilioTokenNew})
		if err != nil {
			t.Fatal(err)
		}
		want := Headers{{Name: "X-Twilio-Signature", Value: twilioSig}, {Name: "I-Twilio-Idempotency-Token", Value: "idem-1"}}
		if len(h) != 2 || h[0] != want[0] || h[1] != want[1] {
			t.Fatalf("Sign = %+v, want %+v", h, want)
		}
	})
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte(twilioForm), URL: twilioURL}, nil},
		{"invalid secret", SignInput{Body: []byte(twilioForm), URL: twilioURL}, []string{" 12345"}},
		{"no URL", SignInput{Body: []byte(twilioForm)}, []string{twilioToken}},
		{"body not a form", SignInput{Body: []byte("a=%"), URL: twilioURL}, []string{twilioToken}},
		{"bodySHA256 of another body", SignInput{Body: []byte(twilioJSON + " "), URL: twilioURL + "&bodySHA256=" + twilioJSONHash}, []string{twilioToken}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}

func TestTwilioParseSecret(t *testing.T) {
	t.Parallel()
	p := Twilio()
	signing, verifying, err := p.ExampleSecret()
	if err != nil || signing != verifying || len(signing) != 32 {
		t.Fatalf("ExampleSecret = %q, %q, %v", signing, verifying, err)
	}
	for _, s := range []string{signing, twilioToken} {
		if _, err := p.ParseSecret(s); err != nil {
			t.Errorf("ParseSecret rejects a token: %v", err)
		}
	}
	for _, s := range []string{"", " " + signing, signing + "\n", "tok en", "tök"} {
		_, err := p.ParseSecret(s)
		if err == nil || !strings.Contains(err.Error(), "invalid secret") {
			t.Errorf("ParseSecret(%q) = %v, want invalid secret", s, err)
		}
		if s != "" && strings.Contains(err.Error(), strings.TrimSpace(s)) {
			t.Errorf("error %q echoes the secret", err)
		}
	}
}

func FuzzTwilioSignature(f *testing.F) {
	p := Twilio()
	keys := keysFor(f, p, twilioToken)
	f.Add(twilioSig, twilioURL, []byte(twilioForm), uint16(0), byte('A'))
	f.Add("a9nBmqA0ju/hNViExpshrM61xv4=", twilioURL+"&bodySHA256="+twilioJSONHash, []byte(twilioJSON), uint16(27), byte('x'))
	f.Fuzz(func(t *testing.T, sig, rawURL string, body []byte, pos uint16, repl byte) {
		req := &Request{Method: "POST", URL: rawURL, Headers: Headers{{Name: "X-Twilio-Signature", Value: sig}}, Body: body}
		_, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		twilioURLVariants(rawURL)

		// A form post we sign (the fuzzed bytes as one parameter value) authenticates, and no
		// single-byte change of its signature does.
		form := []byte(url.Values{"Body": {string(body)}, "MessageSid": {"SM1"}}.Encode())
		h, err := p.Sign(SignInput{Body: form, URL: twilioURL}, []string{twilioToken})
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		checkMutation(t, p, keys, Params{Now: fixedNow}, &Request{Method: "POST", URL: twilioURL, Headers: h, Body: form}, "X-Twilio-Signature", pos, repl)
	})
}

// TestTwilioAcknowledgesWithEmptyTwiML: Twilio reads the answer to an incoming message as
// TwiML, and an empty <Response> is its way to take a message without replying; hookverify's
// generic JSON was logged as an error in the account's debugger on every message.
func TestTwilioAcknowledgesWithEmptyTwiML(t *testing.T) {
	r := Twilio().SuccessReply
	if r == nil {
		t.Fatal("no SuccessReply: Twilio gets the generic JSON acknowledgement")
	}
	var doc struct {
		XMLName xml.Name
		Inner   string `xml:",innerxml"`
	}
	if err := xml.Unmarshal(r.Body, &doc); err != nil || doc.XMLName.Local != "Response" || strings.TrimSpace(doc.Inner) != "" {
		t.Errorf("reply body %q: %+v, %v; want an empty TwiML <Response>", r.Body, doc, err)
	}
	if ct, _ := (Headers(r.Headers)).Get("Content-Type"); r.Status != 200 || ct != "text/xml" {
		t.Errorf("reply %d, Content-Type %q; want 200 text/xml", r.Status, ct)
	}
}
