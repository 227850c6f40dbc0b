package protocol

import (
	"strings"
	"testing"
)

// Front publishes no vector; frontappVectorSig signs the documented validation body with the
// documented algorithm (https://dev.frontapp.com/docs/application-webhooks), computed
// independently: printf '%s' "1700000000000:$body" | openssl dgst -sha256 -hmac front-vector-key -binary | base64
const (
	frontappSecret     = "front-signing-key-one"
	frontappSecret2    = "front-signing-key-two"
	frontappVectorKey  = "front-vector-key"
	frontappVectorBody = `{"type":"sync","authorization":{"id":"cmp_abc"}}`
	frontappVectorSig  = "NlSSY6T/i0Lw+4ziIQWtIHpJpMkN/MJjZhTjyUibQQU="
	frontappVectorMs   = "1700000000000"
)

func frontappRequest(ts, sig, body string, extra ...string) *Request {
	req := &Request{Method: "POST", Headers: Headers{{Name: "x-front-request-timestamp", Value: ts}, {Name: "x-front-signature", Value: sig}}, Body: []byte(body)}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Headers = append(req.Headers, Header{Name: extra[i], Value: extra[i+1]})
	}
	return req
}

func TestFrontAppVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: FrontApp(), secret: frontappSecret, secret2: frontappSecret2,
		sigHeader: "x-front-signature", eventID: "evt_55c8c149", wantEventID: "evt_55c8c149",
		malformed: []string{"", "zz", frontappVectorSig[1:], frontappVectorSig + "=", "sha256=" + frontappVectorSig, strings.TrimRight(frontappVectorSig, "=")},
	}.run(t)
}

func TestFrontAppChallenge(t *testing.T) {
	t.Parallel()
	p := FrontApp()
	keys := keysFor(t, p, frontappVectorKey)
	req := frontappRequest(frontappVectorMs, frontappVectorSig, frontappVectorBody, "x-front-challenge", "d8f7a6e5c4b3")
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	if err != nil || res.Handshake == nil || res.Handshake.Status != 200 || string(res.Handshake.Body) != "d8f7a6e5c4b3" || res.KeyID != "k0" || res.EventID != "" ||
		header(&Request{Headers: res.Handshake.Headers}, "X-Content-Type-Options") != "nosniff" {
		t.Fatalf("challenge = %+v, %v", res, err)
	}
	for _, tc := range []struct {
		name       string
		req        *Request
		keys       []Key
		wantReason Reason
	}{
		{name: "forged challenge (wrong key)", req: req, keys: keysFor(t, p, frontappSecret), wantReason: ReasonSignatureMismatch},
		{name: "unsigned challenge", req: withoutHeader(req, "x-front-signature"), keys: keys, wantReason: ReasonMissingSignature},
		{name: "stale challenge", req: req, keys: keys, wantReason: ReasonTimestampOutOfTolerance},
		{name: "empty challenge", req: withHeader(req, "x-front-challenge", ""), keys: keys, wantReason: ReasonMalformedPayload},
		{name: "CRLF in challenge", req: withHeader(req, "x-front-challenge", "a\r\nb"), keys: keys, wantReason: ReasonMalformedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := fixedNow
			if tc.wantReason == ReasonTimestampOutOfTolerance {
				now = fixedNow.Add(301e9)
			}
			res, err := p.Verify(tc.req, tc.keys, Params{Now: now})
			checkOutcome(t, res, err, tc.wantReason, "", tc.req)
		})
	}
}

func TestFrontAppIdentityAndVector(t *testing.T) {
	t.Parallel()
	p := FrontApp()
	req := frontappRequest(frontappVectorMs, frontappVectorSig, frontappVectorBody)
	res, err := p.Verify(req, keysFor(t, p, frontappVectorKey), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(frontappVectorBody)) {
		t.Fatalf("fallback EventID = %q", res.EventID)
	}
	h, err := p.Sign(SignInput{Body: []byte(frontappVectorBody), Timestamp: fixedNow}, []string{frontappVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("x-front-signature"); got != frontappVectorSig {
		t.Fatalf("Sign = %q, want %q", got, frontappVectorSig)
	}
	req = withoutHeader(req, "x-front-request-timestamp")
	res, err = p.Verify(req, keysFor(t, p, frontappVectorKey), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingTimestamp, "", req)
	checkSecretsRefused(t, p, "", "\tfront-key")
}

func FuzzFrontAppSignatureHeader(f *testing.F) {
	f.Add(frontappVectorSig, []byte(frontappVectorBody), uint16(5), byte('/'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, FrontApp(), frontappVectorKey, "x-front-signature", Headers{{Name: "x-front-request-timestamp", Value: frontappVectorMs}}, sig, body, pos, repl, fixedNow, "")
	})
}
