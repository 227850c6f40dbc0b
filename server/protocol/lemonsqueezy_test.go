package protocol

import (
	"strings"
	"testing"
)

const (
	lemonsqueezySecret    = "s3cr3t-chosen-by-merchant"
	lemonsqueezySecretNew = "another-signing-secret-42"
	lemonsqueezyBody      = `{"meta":{"event_name":"order_created","webhook_id":"e4d4b8b5-7a5c-4b8a-9c8f-4a8a1f1b2c3d"},"data":{"type":"orders","id":"1","attributes":{"status":"paid","total":999}}}`
)

func TestLemonSqueezyVerify(t *testing.T) {
	t.Parallel()
	p := LemonSqueezy()
	in := SignInput{Body: []byte(lemonsqueezyBody)}
	good := signed(t, p, in, lemonsqueezySecret)
	wantID := bodySHA256ID([]byte(lemonsqueezyBody))
	indep := hmacSHA256Hex(lemonsqueezySecret, lemonsqueezyBody)
	fx := signingFixture{
		p: p, secret: lemonsqueezySecret, secretNew: lemonsqueezySecretNew, in: in, wantEvent: wantID,
		sigHeader: "X-Signature",
		malformed: []string{"garbage", "sha256=" + indep, strings.ToUpper(indep), indep[:63]},
	}
	cs := fx.cases(t)
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "X-Signature", indep), keys: []string{lemonsqueezySecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "identity is the body hash", req: withHeader(good, "X-Event-Name", "order_created"), keys: []string{lemonsqueezySecret}, wantKey: "k0", wantEvent: "body-sha256:" + lemonsqueezyBodySHA256},
	)
	runVerifyCases(t, p, cs)
}

// TestLemonSqueezyDocumentedAlgorithm: the docs give hash_hmac('sha256', $payload, $secret)
// and no vector; Sign is pinned to openssl's answer:
// printf '%s' "$lemonsqueezyBody" | openssl dgst -sha256 -hmac "$lemonsqueezySecret"
func TestLemonSqueezyDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := LemonSqueezy().Sign(SignInput{Body: []byte(lemonsqueezyBody)}, []string{lemonsqueezySecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "X-Signature" || h[0].Value != lemonsqueezyOpenSSL {
		t.Fatalf("Sign = %+v", h)
	}
}

func FuzzLemonSqueezySignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, LemonSqueezy(), lemonsqueezySecret, "X-Signature",
		SignInput{Body: []byte(lemonsqueezyBody)}, Params{Now: fixedNow},
		"", "sha256=", "0")
}

const (
	lemonsqueezyOpenSSL    = "0af9e83a6be6b41ea976ee61fb9d4cf7e7f0a12c6486a75fdd63202fe841cb00"
	lemonsqueezyBodySHA256 = "a3558a4693e5047fd20cf635a7e8ef3d19c527badcb517d91f6e05f4f3f122d8"
)
