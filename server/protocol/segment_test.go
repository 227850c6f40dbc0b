package protocol

import (
	"strings"
	"testing"
)

// Segment publishes no vector; the docs state the algorithm (hex HMAC-SHA1 of the payload keyed with the shared secret). The vector was computed independently with Python hmac/hashlib.
const (
	segmentSecret     = "segment-shared-secret-one"
	segmentSecret2    = "segment-shared-secret-two"
	segmentVectorKey  = "segment-vector-secret"
	segmentVectorBody = `{"messageId":"ajs-1","type":"track","event":"Signed Up"}`
	segmentVectorSig  = "b767c593a4b4d0fdea64aa76140f902f39d2cfe5"
)

func TestSegmentVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Segment(), secret: segmentSecret, secret2: segmentSecret2,
		sigHeader: "X-Signature", eventID: "ajs-next-1767647318000-3f2a9c1e", wantEventID: "ajs-next-1767647318000-3f2a9c1e",
		malformed: []string{"", "zz", strings.ToUpper(segmentVectorSig), segmentVectorSig + "00", "sha256=" + segmentVectorSig},
		noIdentity: func(t *testing.T) *Request {
			return signed(t, Segment(), SignInput{Body: []byte(`{"type":"track"}`)}, segmentSecret)
		},
	}.run(t)
}

func TestSegmentVector(t *testing.T) {
	t.Parallel()
	p := Segment()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-Signature", Value: segmentVectorSig}}, Body: []byte(segmentVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, segmentVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "ajs-1" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	res, err = p.Verify(req, keysFor(t, p, segmentSecret), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(segmentVectorBody), EventID: "evt_vector"}, []string{segmentVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-Signature"); got != segmentVectorSig {
		t.Fatalf("Sign = %q, want %q", got, segmentVectorSig)
	}
	checkSecretsRefused(t, p, "", " padded-secret-x ")
}

func FuzzSegmentSignatureHeader(f *testing.F) {
	f.Add(segmentVectorSig, []byte(segmentVectorBody), uint16(3), byte('0'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Segment(), segmentVectorKey, "X-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}
