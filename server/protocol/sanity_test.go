package protocol

import (
	"strings"
	"testing"
	"time"
)

// Sanity publishes no vector; sanityVectorSig follows createHS256Signature in
// sanity-io/webhook-toolkit src/signature.ts and was computed independently:
// printf '%s' "1700000000000.$body" | openssl dgst -sha256 -hmac sanity-vector-secret -binary | base64 | tr '+/' '-_' | tr -d '='
const (
	sanitySecret     = "sanity-webhook-secret-one"
	sanitySecret2    = "sanity-webhook-secret-two"
	sanityVectorKey  = "sanity-vector-secret"
	sanityVectorBody = `{"_id":"movie-1","_type":"movie","title":"Alien"}`
	sanityVectorSig  = "MRrXF5P5bp4_r7geON6nbfuHS0dSsL4FH0OOgl-fzz0"
	sanityVectorHdr  = "t=1700000000000,v1=" + sanityVectorSig
)

func sanityRequest(sig, body string, extra ...string) *Request {
	req := &Request{Method: "POST", Headers: Headers{{Name: "sanity-webhook-signature", Value: sig}}, Body: []byte(body)}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Headers = append(req.Headers, Header{Name: extra[i], Value: extra[i+1]})
	}
	return req
}

func TestSanityVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Sanity(), secret: sanitySecret, secret2: sanitySecret2,
		sigHeader: "sanity-webhook-signature", eventID: "msg-01HZX4C7", wantEventID: "msg-01HZX4C7",
		malformed: []string{"", "v1=" + sanityVectorSig, "t=1700000000000", "t=1700000000000,v1=" + sanityVectorSig + "=", "t=1700000000000;v1=" + sanityVectorSig, "t=abc,v1=" + sanityVectorSig, "t=1700000000000,v1=" + sanityVectorSig + ",v1=" + sanityVectorSig, "t=1700000000000,v1=" + strings.ReplaceAll(sanityVectorSig, "-", "+")},
	}.run(t)
}

func TestSanityHeaderForms(t *testing.T) {
	t.Parallel()
	p := Sanity()
	keys := keysFor(t, p, sanityVectorKey)
	for _, tc := range []struct {
		name, hdr  string
		wantReason Reason
	}{
		{name: "toolkit form", hdr: sanityVectorHdr},
		{name: "space separator (the toolkit's regex allows it; Sanity sends a comma)", hdr: "t=1700000000000 v1=" + sanityVectorSig, wantReason: ReasonMalformedSignature},
		{name: "comma and space", hdr: "t=1700000000000, v1=" + sanityVectorSig, wantReason: ReasonMalformedSignature},
		{name: "surrounding spaces", hdr: "  " + sanityVectorHdr + " "},
		{name: "seconds instead of milliseconds", hdr: "t=1700000000,v1=" + sanityVectorSig, wantReason: ReasonSignatureMismatch},
		{name: "v0 scheme", hdr: "t=1700000000000,v0=" + sanityVectorSig, wantReason: ReasonMalformedSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := sanityRequest(tc.hdr, sanityVectorBody)
			res, err := p.Verify(req, keys, Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
		})
	}
}

func TestSanityIdentity(t *testing.T) {
	t.Parallel()
	p := Sanity()
	keys := keysFor(t, p, sanityVectorKey)
	req := sanityRequest(sanityVectorHdr, sanityVectorBody, "idempotency-key", "msg-123")
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "msg-123" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	req = sanityRequest(sanityVectorHdr, sanityVectorBody)
	res, err = p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(sanityVectorBody)) {
		t.Fatalf("fallback EventID = %q", res.EventID)
	}
}

func TestSanityRecomputedVector(t *testing.T) {
	t.Parallel()
	p := Sanity()
	if got := signedHeader(t, p, SignInput{Body: []byte(sanityVectorBody), Timestamp: fixedNow}, sanityVectorKey, "sanity-webhook-signature"); got != sanityVectorHdr {
		t.Fatalf("Sign = %q, want %q", got, sanityVectorHdr)
	}
	checkSecretsRefused(t, p, "", "sanity-x ")
}

func FuzzSanitySignatureHeader(f *testing.F) {
	f.Add(sanityVectorHdr, []byte(sanityVectorBody), uint16(20), byte('_'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Sanity(), sanityVectorKey, "sanity-webhook-signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}

// The published vectors of sanity-io/webhook-toolkit test/signature.test.ts ("returns true on
// valid signatures"; the first also in test/middleware.test.ts), recomputed independently:
// python3 -c 'import hmac,hashlib,base64;print(base64.urlsafe_b64encode(hmac.new(b"test",b"1633519811129.{\"_id\":\"resume\"}",hashlib.sha256).digest()))'
// The toolkit checks no timestamp window; Sanity() does (300 s), so the clock is set to t.
var sanityToolkitVectors = []struct{ secret, body, header string }{
	{"test", `{"_id":"resume"}`, "t=1633519811129,v1=tLa470fx7qkLLEcMOcEUFuBbRSkGujyskxrNXcoh0N0"},
	{"try-me", `{"title":"GROQ-Hooks are neat"}`, "t=1633518820676,v1=e7C9h2sfbFfc4V7TEz7PSOp4IoNzl0UdVsBV-1wgdeA"},
}

func TestSanityToolkitVectors(t *testing.T) {
	t.Parallel()
	p := Sanity()
	var cs []verifyCase
	for i, v := range sanityToolkitVectors {
		ms, _, err := parseSanityHeader(v.header)
		if err != nil {
			t.Fatal(err)
		}
		at := Params{Now: time.UnixMilli(ms)}
		sig := v.header[strings.Index(v.header, "v1=")+3:]
		// One byte of the signature changed where the base64url stays canonical ('t'->'u', 'e'->'f').
		badSig := strings.Replace(v.header, "v1="+sig[:1], "v1="+string(sig[0]+1), 1)
		name := []string{"resume", "groq"}[i]
		cs = append(cs,
			verifyCase{name: name + ": published vector accepted", req: sanityRequest(v.header, v.body), keys: []string{v.secret}, params: at, wantKey: "k0", wantEvent: bodySHA256ID([]byte(v.body))},
			verifyCase{name: name + ": rotation, vector's secret second", req: sanityRequest(v.header, v.body), keys: []string{"other-secret", v.secret}, params: at, wantKey: "k1", wantEvent: bodySHA256ID([]byte(v.body))},
			verifyCase{name: name + ": one body byte changed", req: sanityRequest(v.header, strings.Replace(v.body, `"`, `'`, 1)), keys: []string{v.secret}, params: at, wantReason: ReasonSignatureMismatch},
			verifyCase{name: name + ": one signature byte changed", req: sanityRequest(badSig, v.body), keys: []string{v.secret}, params: at, wantReason: ReasonSignatureMismatch},
			verifyCase{name: name + ": wrong secret", req: sanityRequest(v.header, v.body), keys: []string{v.secret + "2"}, params: at, wantReason: ReasonSignatureMismatch},
			verifyCase{name: name + ": stale (301 s after t)", req: sanityRequest(v.header, v.body), keys: []string{v.secret}, params: Params{Now: at.Now.Add(301 * time.Second)}, wantReason: ReasonTimestampOutOfTolerance},
		)
	}
	// The toolkit's own rejections (test/signature.test.ts): t one millisecond off, last hash
	// character changed (a non-canonical base64url ending here, so malformed rather than mismatch).
	v := sanityToolkitVectors[0]
	at := Params{Now: time.UnixMilli(1633519811129)}
	cs = append(cs,
		verifyCase{name: "toolkit: invalid timestamp", req: sanityRequest(strings.Replace(v.header, "129,", "128,", 1), v.body), keys: []string{v.secret}, params: at, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "toolkit: invalid hash", req: sanityRequest(strings.TrimSuffix(v.header, "0")+"1", v.body), keys: []string{v.secret}, params: at, wantReason: ReasonMalformedSignature},
	)
	runVerifyCases(t, p, cs)

	// Sign reproduces both published headers.
	for _, v := range sanityToolkitVectors {
		ms, _, _ := parseSanityHeader(v.header)
		if got := signedHeader(t, p, SignInput{Body: []byte(v.body), Timestamp: time.UnixMilli(ms)}, v.secret, "sanity-webhook-signature"); got != v.header {
			t.Fatalf("Sign = %q, want the published %q", got, v.header)
		}
	}
}
