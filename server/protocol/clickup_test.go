package protocol

import (
	"strings"
	"testing"
)

// ClickUp publishes no complete vector (the docs example signature is truncated); the docs example body is signed here with a test secret, computed independently with Python hmac/hashlib.
const (
	clickupSecret     = "CLICKUP1WEBHOOK1SECRET1ABCDEF"
	clickupSecret2    = "CLICKUP2WEBHOOK2SECRET2ABCDEF"
	clickupVectorKey  = "clickup-vector-secret"
	clickupVectorBody = `{"webhook_id":"7689a169-a000-4985-8676-6902b96d6627","event":"taskCreated","task_id":"c0j"}`
	clickupVectorSig  = "c45fdfebb2326f0ff5a48cfbed233d42e3b142e76e5e46f0f2a661d6c2923194"
)

func TestClickUpVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: ClickUp(), secret: clickupSecret, secret2: clickupSecret2,
		sigHeader: "X-Signature", eventID: "2800763136717140857", wantEventIDFor: bodySHA256ID,
		malformed:  []string{"", "zz", strings.ToUpper(clickupVectorSig), clickupVectorSig + "00", "sha256=" + clickupVectorSig},
		noIdentity: nil,
	}.run(t)
}

func TestClickUpVector(t *testing.T) {
	t.Parallel()
	p := ClickUp()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-Signature", Value: clickupVectorSig}}, Body: []byte(clickupVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, clickupVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(clickupVectorBody)) {
		t.Fatalf("EventID = %q", res.EventID)
	}
	res, err = p.Verify(req, keysFor(t, p, clickupSecret), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(clickupVectorBody), EventID: "evt_vector"}, []string{clickupVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-Signature"); got != clickupVectorSig {
		t.Fatalf("Sign = %q, want %q", got, clickupVectorSig)
	}
	checkSecretsRefused(t, p, "", " padded-secret-x ")
}

func FuzzClickUpSignatureHeader(f *testing.F) {
	f.Add(clickupVectorSig, []byte(clickupVectorBody), uint16(3), byte('0'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, ClickUp(), clickupVectorKey, "X-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}
