package protocol

import (
	"strings"
	"testing"
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
