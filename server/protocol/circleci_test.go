package protocol

import (
	"strings"
	"testing"
)

const (
	circleciSecret    = "9b3c0e7a1f5d42c8b6e0a4f2d8c6b1e3a5f7d9c0"
	circleciSecretNew = "1e3a5f7d9c0b2e4a6f8d0c2b4e6a8f0d2c4b6e8a"
	circleciEventID   = "3888f21b-eaa7-38e3-8f3d-75a63bba8895"
)

func TestCircleCIVerify(t *testing.T) {
	t.Parallel()
	p := CircleCI()
	body := string(ExampleBody(p, circleciEventID))
	in := SignInput{Body: []byte(body)}
	good := signed(t, p, in, circleciSecret)
	indep := "v1=" + hmacSHA256Hex(circleciSecret, body)
	fx := signingFixture{
		p: p, secret: circleciSecret, secretNew: circleciSecretNew, in: in, wantEvent: circleciEventID,
		sigHeader: "circleci-signature", list: true,
		noID:      signed(t, p, SignInput{Body: []byte(`{"type":"ping"}`)}, circleciSecret),
		malformed: []string{"garbage", "v1=", "v1=" + strings.ToUpper(indep[3:]), indep[3:]},
		missing:   []string{"v2=" + indep[3:]},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "circleci-signature", indep), keys: []string{circleciSecret}, wantKey: "k0", wantEvent: circleciEventID},
		verifyCase{name: "future versions beside v1 ignored", req: withHeader(good, "circleci-signature", "v2=abc,"+indep), keys: []string{circleciSecret}, wantKey: "k0", wantEvent: circleciEventID},
		verifyCase{name: "body not JSON", req: signed(t, p, SignInput{Body: []byte("x")}, circleciSecret), keys: []string{circleciSecret}, wantReason: ReasonMalformedPayload},
	)
	runVerifyCases(t, p, cs)
}

// TestCircleCIDocumentedAlgorithm: CircleCI documents "v1=" + hex HMAC-SHA256 of the body with
// the webhook secret, but no vector; Sign is pinned to openssl's answer:
// printf '%s' '{"id":"x"}' | openssl dgst -sha256 -hmac "$circleciSecret"
func TestCircleCIDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := CircleCI().Sign(SignInput{Body: []byte(`{"id":"x"}`)}, []string{circleciSecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "circleci-signature" || h[0].Value != "v1="+circleciOpenSSL {
		t.Fatalf("Sign = %+v", h)
	}
}

func FuzzCircleCISignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, CircleCI(), circleciSecret, "circleci-signature",
		SignInput{Body: ExampleBody(CircleCI(), circleciEventID)}, Params{Now: fixedNow},
		"v1=,v2=", ",,", "v1")
}

const circleciOpenSSL = "9abee99266df12cbf7e9d5dcc812377ea4264c50531de7bf367cb5ceb94203a7"
