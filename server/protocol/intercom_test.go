package protocol

import (
	"strings"
	"testing"
)

const (
	intercomSecret    = "1a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"
	intercomSecretNew = "6d5c4b3a-2f1e-4d0c-9b8a-7f6e5d4c3b2a"
	intercomNotifID   = "notif_ccd8a4d2-3f0a-11e7-a4a3-6fcb7a7e0b0d"
)

func TestIntercomVerify(t *testing.T) {
	t.Parallel()
	p := Intercom()
	body := ExampleBody(p, intercomNotifID)
	in := SignInput{Body: body}
	good := signed(t, p, in, intercomSecret)
	indep := "sha1=" + hmacSHA1Hex(intercomSecret, string(body))
	fx := signingFixture{
		p: p, secret: intercomSecret, secretNew: intercomSecretNew, in: in, wantEvent: intercomNotifID,
		sigHeader: "X-Hub-Signature",
		noID:      signed(t, p, SignInput{Body: []byte(`{"type":"notification_event"}`)}, intercomSecret),
		malformed: []string{"garbage", "sha1=", "sha1=" + strings.ToUpper(indep[5:]), "sha1=" + hmacSHA256Hex(intercomSecret, string(body))},
		// The documented example header, whose secret is not published, is well-formed.
		missing: []string{"sha256=" + hmacSHA256Hex(intercomSecret, string(body))},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "X-Hub-Signature", indep), keys: []string{intercomSecret}, wantKey: "k0", wantEvent: intercomNotifID},
		verifyCase{name: "documented example header is well-formed but does not match", req: withHeader(good, "X-Hub-Signature", "sha1=21ff2e149e0fdcac6f947740f6177f6434bda921"), keys: []string{intercomSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "body not JSON", req: signed(t, p, SignInput{Body: []byte("x")}, intercomSecret), keys: []string{intercomSecret}, wantReason: ReasonMalformedPayload},
	)
	runVerifyCases(t, p, cs)
}

// TestIntercomDocumentedAlgorithm: Intercom's example header has no published secret, so Sign
// is pinned to openssl's answer for the documented construction (HMAC-SHA1 hex of the body):
// printf '%s' '{"id":"notif_1"}' | openssl dgst -sha1 -hmac "$intercomSecret"
func TestIntercomDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := Intercom().Sign(SignInput{Body: []byte(`{"id":"notif_1"}`)}, []string{intercomSecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "X-Hub-Signature" || h[0].Value != "sha1="+intercomOpenSSL {
		t.Fatalf("Sign = %+v", h)
	}
}

func FuzzIntercomSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Intercom(), intercomSecret, "X-Hub-Signature",
		SignInput{Body: ExampleBody(Intercom(), intercomNotifID)}, Params{Now: fixedNow},
		"sha1=21ff2e149e0fdcac6f947740f6177f6434bda921", "sha256=", "=")
}

const intercomOpenSSL = "040c1f88b1c25af764ef96230b50c62412bacc17"
