package protocol

import (
	"strings"
	"testing"
	"time"
)

// The published vector, from muxinc/mux-node-sdk test/unit/webhooks/resources/verify_header.spec.js
// ("generated from Mux's backend code"), repeated in mux-ruby spec and mux-elixir tests.
const (
	muxVectorSecret = "SuperSecret123"
	muxVectorBody   = `{"test":"body"}`
	muxVectorHeader = "t=1565125718,v1=854ece4c22acef7c66b57d4e504153bc512595e8e9c772ece2a68150548c19a7"
	muxSecret       = "mux-test-signing-secret-1"
	muxSecret2      = "mux-test-signing-secret-2"
)

func TestMuxVerify(t *testing.T) {
	t.Parallel()
	ts := "t=1700000000"
	sig := "854ece4c22acef7c66b57d4e504153bc512595e8e9c772ece2a68150548c19a7"
	providerSuite{
		p: Mux(), secret: muxSecret, secret2: muxSecret2,
		sigHeader: "Mux-Signature", eventID: "3a56ac3d-33da-4366-855b-f592d898409d", wantEventID: "3a56ac3d-33da-4366-855b-f592d898409d",
		malformed: []string{"", "v1=" + sig, ts + ",v1=" + strings.ToUpper(sig), ts + ",v1=" + sig[:60], "t=abc,v1=" + sig, ts + "," + ts + ",v1=" + sig, ts + ",v1"},
		noIdentity: func(t *testing.T) *Request {
			return signed(t, Mux(), SignInput{Body: []byte(`{"type":"video.asset.ready"}`), Timestamp: fixedNow}, muxSecret)
		},
	}.run(t)
}

func TestMuxHeaderForms(t *testing.T) {
	t.Parallel()
	p := Mux()
	body := string(muxExampleBody("evt-1"))
	good := signed(t, p, SignInput{Body: []byte(body), Timestamp: fixedNow}, muxSecret)
	gv := header(good, "Mux-Signature")
	_, v1, _ := strings.Cut(gv, ",")
	for _, tc := range []struct {
		name, value string
		wantReason  Reason
	}{
		{name: "unknown scheme ignored", value: gv + ",v0=" + strings.Repeat("ab", 32), wantReason: 0},
		{name: "v1 before t", value: v1 + ",t=" + "1700000000"},
		{name: "extra wrong v1 with a right one", value: gv + ",v1=" + strings.Repeat("ab", 32)},
		{name: "only another scheme", value: "t=1700000000,v2=" + strings.Repeat("ab", 32), wantReason: ReasonMissingSignature},
		{name: "malformed extra v1 alongside the right one", value: gv + ",v1=zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := withHeader(good, "Mux-Signature", tc.value)
			res, err := p.Verify(req, keysFor(t, p, muxSecret), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, "k0", req)
		})
	}
}

func TestMuxPublishedVector(t *testing.T) {
	t.Parallel()
	p := Mux()
	at := time.Unix(1565125718, 0)
	req := &Request{Method: "POST", Headers: Headers{{Name: "Mux-Signature", Value: muxVectorHeader}}, Body: []byte(muxVectorBody)}
	// The vector's body has no "id": it authenticates, and then has no identity.
	res, err := p.Verify(req, keysFor(t, p, muxVectorSecret), Params{Now: at})
	checkOutcome(t, res, err, ReasonMissingEventID, "", req)
	// A day later the SDK test expects "Timestamp outside the tolerance zone".
	res, err = p.Verify(req, keysFor(t, p, muxVectorSecret), Params{Now: at.Add(24 * time.Hour)})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", req)
	res, err = p.Verify(req, keysFor(t, p, "wrong"), Params{Now: at})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(muxVectorBody), Timestamp: at}, []string{muxVectorSecret})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("Mux-Signature"); got != muxVectorHeader {
		t.Fatalf("Sign = %q, want %q", got, muxVectorHeader)
	}
	checkSecretsRefused(t, p, "", "secret\n")
}

func FuzzMuxSignatureHeader(f *testing.F) {
	f.Add(muxVectorHeader, []byte(muxVectorBody), uint16(20), byte('f'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Mux(), muxVectorSecret, "Mux-Signature", nil, sig, body, pos, repl, time.Unix(1565125718, 0), "")
	})
}
