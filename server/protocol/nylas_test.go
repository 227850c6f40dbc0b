package protocol

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

// Nylas publishes no vector; nylasVectorSig follows the documented algorithm (hex HMAC-SHA256 of
// the raw body) and was computed independently:
// printf '%s' '{"id":"evt_nylas_1","type":"grant.created"}' | openssl dgst -sha256 -hmac nylas-vector-secret
const (
	nylasSecret     = "nylas-webhook-secret-one"
	nylasSecret2    = "nylas-webhook-secret-two"
	nylasVectorKey  = "nylas-vector-secret"
	nylasVectorBody = `{"id":"evt_nylas_1","type":"grant.created"}`
	nylasVectorSig  = "52548ce9b3785db42447eb34857dfb249123285c05f82e3cc90260e570c2dfd9"
)

func TestNylasVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Nylas(), secret: nylasSecret, secret2: nylasSecret2,
		sigHeader: "X-Nylas-Signature", eventID: "5e3a1b0c-9d2f-4b8a-8a6e-1c2d3e4f5a6b", wantEventID: "5e3a1b0c-9d2f-4b8a-8a6e-1c2d3e4f5a6b",
		malformed: []string{"", "zz", strings.ToUpper(nylasVectorSig), "sha256=" + nylasVectorSig, nylasVectorSig + "0"},
		noIdentity: func(t *testing.T) *Request {
			return signed(t, Nylas(), SignInput{Body: []byte(`{"type":"message.created"}`)}, nylasSecret)
		},
	}.run(t)
}

func TestNylasChallenge(t *testing.T) {
	t.Parallel()
	p := Nylas()
	keys := keysFor(t, p, nylasSecret)
	for _, tc := range []struct {
		name, method, url string
		wantBody          string
		wantReason        Reason
	}{
		{name: "challenge echoed", method: "GET", url: "https://hooks.example.com/nylas?challenge=bc609b38-c81f-47fb-a275-1d9bd61be301", wantBody: "bc609b38-c81f-47fb-a275-1d9bd61be301"},
		{name: "challenge decoded from the query", method: "GET", url: "https://hooks.example.com/nylas?x=1&challenge=a%2Bb%20c", wantBody: "a+b c"},
		{name: "GET without challenge", method: "GET", url: "https://hooks.example.com/nylas", wantReason: ReasonMissingSignature},
		{name: "GET with empty challenge", method: "GET", url: "https://hooks.example.com/nylas?challenge=", wantReason: ReasonMissingSignature},
		{name: "oversized challenge", method: "GET", url: "https://hooks.example.com/nylas?challenge=" + strings.Repeat("a", 1025), wantReason: ReasonMissingSignature},
		{name: "unparsable URL", method: "GET", url: "%zz", wantReason: ReasonMissingSignature},
		{name: "POST with a challenge is a notification, not a handshake", method: "POST", url: "https://hooks.example.com/nylas?challenge=abc", wantReason: ReasonMissingSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := &Request{Method: tc.method, URL: tc.url}
			res, err := p.Verify(req, keys, Params{})
			if tc.wantReason != 0 {
				checkOutcome(t, res, err, tc.wantReason, "", req)
				return
			}
			if err != nil {
				t.Fatalf("handshake rejected: %v", err)
			}
			if res.Handshake == nil || res.Handshake.Status != 200 || string(res.Handshake.Body) != tc.wantBody || res.EventID != "" {
				t.Fatalf("result %+v", res)
			}
			if nosniff, _ := res.Handshake.Headers.Get("X-Content-Type-Options"); nosniff != "nosniff" {
				t.Fatalf("X-Content-Type-Options %q: an echo of caller input must not be sniffed as HTML", nosniff)
			}
			if ct, _ := res.Handshake.Headers.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}

func TestNylasRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Nylas()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-Nylas-Signature", Value: nylasVectorSig}}, Body: []byte(nylasVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, nylasVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "evt_nylas_1" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	h, err := p.Sign(SignInput{Body: []byte(nylasVectorBody)}, []string{nylasVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-Nylas-Signature"); got != nylasVectorSig {
		t.Fatalf("Sign = %q, want %q", got, nylasVectorSig)
	}
	checkSecretsRefused(t, p, "", "nylas-x ")
}

func FuzzNylasSignatureHeader(f *testing.F) {
	f.Add(nylasVectorSig, []byte(nylasVectorBody), uint16(4), byte('x'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Nylas(), nylasVectorKey, "X-Nylas-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}

func FuzzNylasChallenge(f *testing.F) {
	f.Add("https://hooks.example.com/nylas?challenge=abc")
	f.Fuzz(func(t *testing.T, u string) {
		res, err := Nylas().Verify(&Request{Method: "GET", URL: u}, nil, Params{})
		checkAnswer(t, err)
		if err == nil && (res.Handshake == nil || len(res.Handshake.Body) == 0 || len(res.Handshake.Body) > 1024) {
			t.Fatalf("GET accepted without a proper handshake: %+v", res)
		}
	})
}

// TestNylasCompressedDeliveryIsRefused: a destination with compressed_delivery sends gzip
// bodies. Signed over the compressed bytes, such a notification still has no JSON "id" to claim,
// and is refused as the Retries text says, never accepted under some other identity.
func TestNylasCompressedDeliveryIsRefused(t *testing.T) {
	t.Parallel()
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write([]byte(nylasVectorBody)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	p := Nylas()
	req := signed(t, p, SignInput{Body: gz.Bytes()}, nylasSecret)
	req.Headers = append(req.Headers, Header{Name: "Content-Encoding", Value: "gzip"})
	res, err := p.Verify(req, keysFor(t, p, nylasSecret), Params{})
	checkOutcome(t, res, err, ReasonMalformedPayload, "", req)
}
