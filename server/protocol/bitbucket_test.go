package protocol

import (
	"strings"
	"testing"
)

const (
	bitbucketSecret    = "It's a Secret to Everybody"
	bitbucketSecretNew = "d6f1c0e3b2a94f8e7d6c5b4a39281706"
	bitbucketUUID      = "{d7f2a7c5-9d1c-4c1e-8e0f-3a1b2c3d4e5f}"
	bitbucketBody      = `{"push":{"changes":[]},"repository":{"full_name":"team/repo"},"actor":{"display_name":"A"}}`
)

func TestBitbucketVerify(t *testing.T) {
	t.Parallel()
	p := Bitbucket()
	in := SignInput{Body: []byte(bitbucketBody), EventID: bitbucketUUID}
	good := signed(t, p, in, bitbucketSecret)
	indep := "sha256=" + hmacSHA256Hex(bitbucketSecret, bitbucketBody)
	fx := signingFixture{
		p: p, secret: bitbucketSecret, secretNew: bitbucketSecretNew, in: in, wantEvent: bitbucketUUID,
		sigHeader: "X-Hub-Signature",
		noID:      withoutHeader(good, "X-Request-UUID"),
		malformed: []string{"garbage", "sha256=", "sha256=" + strings.ToUpper(indep[7:]), indep[:70]},
		missing:   []string{"sha1=" + hmacSHA1Hex(bitbucketSecret, bitbucketBody), "sha512=abc"},
	}
	cs := fx.cases(t)
	server := withHeader(withoutHeader(good, "X-Request-UUID"), "X-Request-Id", "a1b2c3d4-0000-4000-8000-000000000001")
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "X-Hub-Signature", indep), keys: []string{bitbucketSecret}, wantKey: "k0", wantEvent: bitbucketUUID},
		verifyCase{name: "Data Center X-Request-Id identity", req: server, keys: []string{bitbucketSecret}, wantKey: "k0", wantEvent: "a1b2c3d4-0000-4000-8000-000000000001"},
		verifyCase{name: "X-Request-UUID preferred", req: withHeader(good, "X-Request-Id", "other"), keys: []string{bitbucketSecret}, wantKey: "k0", wantEvent: bitbucketUUID},
	)
	runVerifyCases(t, p, cs)
}

// TestBitbucketDocumentedAlgorithm: Atlassian's pages show the header form
// ("X-Hub-Signature: sha256=...") but no secret to recompute it with, so Sign is pinned to
// openssl's answer for the documented construction, HMAC-SHA256 of the body in hex:
// printf '%s' "$bitbucketBody" | openssl dgst -sha256 -hmac "$bitbucketSecret"
func TestBitbucketDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := Bitbucket().Sign(SignInput{Body: []byte(bitbucketBody), EventID: bitbucketUUID}, []string{bitbucketSecret})
	if err != nil {
		t.Fatal(err)
	}
	if got := header(&Request{Headers: h}, "X-Hub-Signature"); got != "sha256="+bitbucketOpenSSL {
		t.Fatalf("X-Hub-Signature = %q", got)
	}
}

func FuzzBitbucketSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Bitbucket(), bitbucketSecret, "X-Hub-Signature",
		SignInput{Body: []byte(bitbucketBody), EventID: bitbucketUUID}, Params{Now: fixedNow},
		"sha256=", "sha1=00", "=")
}

const bitbucketOpenSSL = "418ec9a2723c6e71b481640d06c775f73a999834ff9204f300cd326aee9e7966"
