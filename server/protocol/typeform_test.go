package protocol

import (
	"strings"
	"testing"
)

const (
	typeformSecret    = "a8f5f167f44f4964e6c998dee827110c"
	typeformSecretNew = "0b5cd5d0c2a8c2b1e4f3b6a7d9e8f1c2"
	typeformEventID   = "01GZBQ5Y6K5M8Z2Y0S6B1ZK4V7"
)

func TestTypeformVerify(t *testing.T) {
	t.Parallel()
	p := Typeform()
	body := typeformExampleBody(typeformEventID)
	in := SignInput{Body: body}
	good := signed(t, p, in, typeformSecret)
	indep := "sha256=" + hmacSHA256Base64(typeformSecret, string(body))
	fx := signingFixture{
		p: p, secret: typeformSecret, secretNew: typeformSecretNew, in: in, wantEvent: typeformEventID,
		sigHeader: "Typeform-Signature",
		noID:      signed(t, p, SignInput{Body: []byte(`{"event_type":"form_response"}`)}, typeformSecret),
		malformed: []string{"garbage", "sha256=", strings.TrimRight(indep, "="), "sha256=" + hmacSHA256Hex(typeformSecret, string(body)), indep + ",sha256=x"},
		missing:   []string{"sha1=" + indep[7:], "v1=" + indep[7:]},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "Typeform-Signature", indep), keys: []string{typeformSecret}, wantKey: "k0", wantEvent: typeformEventID},
		verifyCase{name: "body not JSON", req: signed(t, p, SignInput{Body: []byte("not json")}, typeformSecret), keys: []string{typeformSecret}, wantReason: ReasonMalformedPayload},
		verifyCase{name: "event_id empty", req: signed(t, p, SignInput{Body: []byte(`{"event_id":""}`)}, typeformSecret), keys: []string{typeformSecret}, wantReason: ReasonMissingEventID},
		verifyCase{name: "event_id not a string", req: signed(t, p, SignInput{Body: []byte(`{"event_id":7}`)}, typeformSecret), keys: []string{typeformSecret}, wantReason: ReasonMissingEventID},
	)
	runVerifyCases(t, p, cs)
}

// TestTypeformDocumentedAlgorithm: Typeform's page gives the steps ("HMAC SHA-256 ... of the
// entire received payload as binary. Encode the binary hash in base64 format. Add prefix
// sha256=") but no fixed vector, so Sign is pinned to openssl's answer:
// printf '%s' '{"event_id":"x"}' | openssl dgst -sha256 -hmac "$typeformSecret" -binary | base64
func TestTypeformDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := Typeform().Sign(SignInput{Body: []byte(`{"event_id":"x"}`)}, []string{typeformSecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "Typeform-Signature" || h[0].Value != "sha256="+typeformOpenSSL {
		t.Fatalf("Sign = %+v", h)
	}
}

func FuzzTypeformSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Typeform(), typeformSecret, "Typeform-Signature",
		SignInput{Body: typeformExampleBody(typeformEventID)}, Params{Now: fixedNow},
		"sha256=", "=", "sha1=abc")
}

const typeformOpenSSL = "7MCqprQyjgh3CfI5Uh6C8s7+NgMdsVNvERpC8Kqpuf0="
