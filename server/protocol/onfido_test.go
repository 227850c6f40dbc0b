package protocol

import (
	"strings"
	"testing"
)

// The vector is the official SDK test WebhookEventVerifierTest (onfido-java; onfido-node's test uses the same token and signature), recomputed independently with openssl.
const (
	onfidoSecret     = "_onfidoWebhookToken1_abcdefghij"
	onfidoSecret2    = "_onfidoWebhookToken2_abcdefghij"
	onfidoVectorKey  = "_ABC123abc123ABC123abc123ABC123_"
	onfidoVectorBody = `{"payload":{"resource_type":"check","action":"check.completed","object":{"id":"check-123","status":"complete","completed_at_iso8601":"2020-01-01T00:00:00Z","href":"https://api.onfido.com/v3/checks/check-123"}}}`
	onfidoVectorSig  = "a0082d7481f9f0a2907583dbe1f344d6d4c0d9989df2fd804f98479f60cd760e"
)

func TestOnfidoVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: Onfido(), secret: onfidoSecret, secret2: onfidoSecret2,
		sigHeader: "X-SHA2-Signature", eventID: "0b0f8b6c-4f3e-4d1a-9b51-3c0e2f0d1a2b", wantEventIDFor: bodySHA256ID,
		malformed:  []string{"", "zz", strings.ToUpper(onfidoVectorSig), onfidoVectorSig + "00", "sha256=" + onfidoVectorSig},
		noIdentity: nil,
	}.run(t)
}

func TestOnfidoVector(t *testing.T) {
	t.Parallel()
	p := Onfido()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-SHA2-Signature", Value: onfidoVectorSig}}, Body: []byte(onfidoVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, onfidoVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(onfidoVectorBody)) {
		t.Fatalf("EventID = %q", res.EventID)
	}
	res, err = p.Verify(req, keysFor(t, p, onfidoSecret), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(onfidoVectorBody), EventID: "evt_vector"}, []string{onfidoVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-SHA2-Signature"); got != onfidoVectorSig {
		t.Fatalf("Sign = %q, want %q", got, onfidoVectorSig)
	}
	checkSecretsRefused(t, p, "", " padded-secret-x ")
}

func FuzzOnfidoSignatureHeader(f *testing.F) {
	f.Add(onfidoVectorSig, []byte(onfidoVectorBody), uint16(3), byte('0'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, Onfido(), onfidoVectorKey, "X-SHA2-Signature", nil, sig, body, pos, repl, fixedNow, "")
	})
}
