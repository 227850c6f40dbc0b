package protocol

import (
	"strings"
	"testing"
)

// Asana publishes no signature vector. The secret is the one in Asana's handshake example
// (https://developers.asana.com/reference/createwebhook), and asanaVectorSig signs a heartbeat
// body with it, computed independently:
// printf '%s' '{"events":[]}' | openssl dgst -sha256 -hmac b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81
const (
	asanaSecret     = "0f7c3a9e2b6d4f1a8c5e7b9d2f4a6c8e1b3d5f7a9c2e4b6d8f1a3c5e7b9d2f4a"
	asanaSecret2    = "9d2f4a6c8e1b3d5f7a9c2e4b6d8f1a3c5e7b9d2f4a0f7c3a9e2b6d4f1a8c5e7b"
	asanaVectorKey  = "b537207f20cbfa02357cf448134da559e8bd39d61597dcd5631b8012eae53e81"
	asanaVectorBody = `{"events":[]}`
	asanaVectorSig  = "10468027b67df18c739cc4794c6fc2d2806dcaaf2259fc3e1ed9d26433659853"
)

func TestAsanaVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Asana(), secret: asanaSecret, secret2: asanaSecret2,
		sigHeader: "X-Hook-Signature", eventID: "1209876543210", wantEventIDFor: bodySHA256ID,
		malformed: []string{"", "zz", strings.ToUpper(asanaVectorSig), "sha256=" + asanaVectorSig, asanaVectorSig[2:]},
	}.run(t)
}

func TestAsanaHandshake(t *testing.T) {
	t.Parallel()
	p := Asana()
	for _, tc := range []struct {
		name       string
		headers    Headers
		wantEcho   string
		wantReason Reason
	}{
		{name: "echoes the documented example secret", headers: Headers{{Name: "X-Hook-Secret", Value: asanaVectorKey}}, wantEcho: asanaVectorKey},
		{name: "header name case-insensitive", headers: Headers{{Name: "x-hook-secret", Value: "abc123"}}, wantEcho: "abc123"},
		{name: "empty secret", headers: Headers{{Name: "X-Hook-Secret", Value: ""}}, wantReason: ReasonMalformedSignature},
		{name: "CRLF injection refused", headers: Headers{{Name: "X-Hook-Secret", Value: "abc\r\nSet-Cookie: x=1"}}, wantReason: ReasonMalformedSignature},
		{name: "space refused", headers: Headers{{Name: "X-Hook-Secret", Value: "abc def"}}, wantReason: ReasonMalformedSignature},
		{name: "oversized secret", headers: Headers{{Name: "X-Hook-Secret", Value: strings.Repeat("a", 257)}}, wantReason: ReasonMalformedSignature},
		{name: "secret plus a forged signature is an event, not a handshake", headers: Headers{{Name: "X-Hook-Secret", Value: "abc"}, {Name: "X-Hook-Signature", Value: strings.Repeat("ab", 32)}}, wantReason: ReasonSignatureMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := &Request{Method: "POST", Headers: tc.headers}
			res, err := p.Verify(req, keysFor(t, p, asanaSecret), Params{})
			if tc.wantReason != 0 {
				checkOutcome(t, res, err, tc.wantReason, "", req)
				return
			}
			if err != nil || res.Handshake == nil || res.Handshake.Status != 200 || res.EventID != "" || res.KeyID != "" {
				t.Fatalf("handshake = %+v, %v", res, err)
			}
			if got, _ := res.Handshake.Headers.Get("X-Hook-Secret"); got != tc.wantEcho {
				t.Fatalf("echoed %q, want %q", got, tc.wantEcho)
			}
		})
	}
}

func TestAsanaRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Asana()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-Hook-Signature", Value: asanaVectorSig}}, Body: []byte(asanaVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, asanaVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(asanaVectorBody)) {
		t.Fatalf("EventID = %q", res.EventID)
	}
	if got := signedHeader(t, p, SignInput{Body: []byte(asanaVectorBody)}, asanaVectorKey, "X-Hook-Signature"); got != asanaVectorSig {
		t.Fatalf("Sign = %q, want %q", got, asanaVectorSig)
	}
	checkSecretsRefused(t, p, "", asanaVectorKey+" ")
}

func FuzzAsanaSignatureHeader(f *testing.F) {
	f.Add(asanaVectorSig, []byte(asanaVectorBody), uint16(1), byte('F'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Asana(), asanaVectorKey, "X-Hook-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}

func FuzzAsanaHandshake(f *testing.F) {
	f.Add(asanaVectorKey)
	f.Fuzz(func(t *testing.T, secret string) {
		res, err := Asana().Verify(&Request{Method: "POST", Headers: Headers{{Name: "X-Hook-Secret", Value: secret}}}, nil, Params{})
		checkAnswer(t, err)
		if err == nil {
			echo, _ := res.Handshake.Headers.Get("X-Hook-Secret")
			if echo != secret || strings.ContainsAny(echo, "\r\n \x00") {
				t.Fatalf("echoed %q for %q", echo, secret)
			}
		}
	})
}
