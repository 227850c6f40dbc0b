package protocol

import (
	"strings"
	"testing"
)

// LaunchDarkly publishes no vector; the docs state the algorithm (HMAC SHA256 hex digest of the payload keyed with the secret). The vector was computed independently with Python hmac/hashlib.
const (
	launchdarklySecret     = "ld-webhook-secret-one"
	launchdarklySecret2    = "ld-webhook-secret-two"
	launchdarklyVectorKey  = "ld-vector-secret"
	launchdarklyVectorBody = `{"_id":"57c0a8e29969090743529965","kind":"environment","name":"Testing"}`
	launchdarklyVectorSig  = "cfa73861fd2edeae71f2131256e0550818e7137dbb6ff09499f02a4e0aa234d3"
)

func TestLaunchDarklyVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: LaunchDarkly(), secret: launchdarklySecret, secret2: launchdarklySecret2,
		sigHeader: "X-LD-Signature", eventID: "57c0a8e29969090743529965", wantEventID: "57c0a8e29969090743529965",
		malformed: []string{"", "zz", strings.ToUpper(launchdarklyVectorSig), launchdarklyVectorSig + "00", "sha256=" + launchdarklyVectorSig},
		noIdentity: func(t *testing.T) *Request {
			return signed(t, LaunchDarkly(), SignInput{Body: []byte(`{"kind":"flag"}`)}, launchdarklySecret)
		},
	}.run(t)
}

func TestLaunchDarklyVector(t *testing.T) {
	t.Parallel()
	p := LaunchDarkly()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-LD-Signature", Value: launchdarklyVectorSig}}, Body: []byte(launchdarklyVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, launchdarklyVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "57c0a8e29969090743529965" {
		t.Fatalf("EventID = %q", res.EventID)
	}
	res, err = p.Verify(req, keysFor(t, p, launchdarklySecret), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(launchdarklyVectorBody), EventID: "evt_vector"}, []string{launchdarklyVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-LD-Signature"); got != launchdarklyVectorSig {
		t.Fatalf("Sign = %q, want %q", got, launchdarklyVectorSig)
	}
	checkSecretsRefused(t, p, "", " padded-secret-x ")
}

func FuzzLaunchDarklySignatureHeader(f *testing.F) {
	f.Add(launchdarklyVectorSig, []byte(launchdarklyVectorBody), uint16(3), byte('0'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, LaunchDarkly(), launchdarklyVectorKey, "X-LD-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}
