package protocol

import (
	"strings"
	"testing"
)

// Cal.com publishes no vector; the vector follows createWebhookSignature in calcom/cal.com packages/features/webhooks/lib/sendPayload.ts (hex HMAC-SHA256 of the body) and was computed independently with Python hmac/hashlib.
const (
	calcomSecret     = "calcom-webhook-secret-one"
	calcomSecret2    = "calcom-webhook-secret-two"
	calcomVectorKey  = "calcom-vector-secret"
	calcomVectorBody = `{"triggerEvent":"PING","createdAt":"2026-01-05T21:08:38.000Z","payload":{}}`
	calcomVectorSig  = "357ed69f614c5bafee8a413dddf7df2ae9990516aa54dbc8cb6fc737623139b7"
)

func TestCalComVerify(t *testing.T) {
	t.Parallel()
	providerSuite{
		p: CalCom(), secret: calcomSecret, secret2: calcomSecret2,
		sigHeader: "X-Cal-Signature-256", eventID: "bFJeNb2uX8ANpT3JL5EfXw", wantEventIDFor: bodySHA256ID,
		malformed:  []string{"", "zz", strings.ToUpper(calcomVectorSig), calcomVectorSig + "00", "sha256=" + calcomVectorSig},
		noIdentity: nil,
	}.run(t)
}

func TestCalComVector(t *testing.T) {
	t.Parallel()
	p := CalCom()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-Cal-Signature-256", Value: calcomVectorSig}}, Body: []byte(calcomVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, calcomVectorKey), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != bodySHA256ID([]byte(calcomVectorBody)) {
		t.Fatalf("EventID = %q", res.EventID)
	}
	res, err = p.Verify(req, keysFor(t, p, calcomSecret), Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	h, err := p.Sign(SignInput{Body: []byte(calcomVectorBody), EventID: "evt_vector"}, []string{calcomVectorKey})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-Cal-Signature-256"); got != calcomVectorSig {
		t.Fatalf("Sign = %q, want %q", got, calcomVectorSig)
	}
	checkSecretsRefused(t, p, "", " padded-secret-x ")
}

func FuzzCalComSignatureHeader(f *testing.F) {
	f.Add(calcomVectorSig, []byte(calcomVectorBody), uint16(3), byte('0'))
	f.Fuzz(func(t *testing.T, sig string, body []byte, pos uint16, repl byte) {
		verifyFuzzedHeader(t, CalCom(), calcomVectorKey, "X-Cal-Signature-256", nil, sig, body, pos, repl, fixedNow, "")
	})
}

// TestCalComNoSecretProvided: a webhook without a secret sends this literal instead of a
// signature (createWebhookSignature), which must never authenticate.
func TestCalComNoSecretProvided(t *testing.T) {
	t.Parallel()
	p := CalCom()
	req := &Request{Method: "POST", Headers: Headers{{Name: "X-Cal-Signature-256", Value: "no-secret-provided"}}, Body: []byte(calcomVectorBody)}
	res, err := p.Verify(req, keysFor(t, p, calcomVectorKey), Params{})
	checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
}
