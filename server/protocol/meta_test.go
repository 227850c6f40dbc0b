package protocol

import (
	"net/url"
	"strings"
	"testing"
)

const (
	metaSecret      = "6b0f2c1e8d7a4b3c9e5f1a2d3c4b5a69"
	metaSecretNew   = "f1e2d3c4b5a697887766554433221100"
	metaVerifyToken = "my-verify-token-9f8e7d"
	metaBody        = `{"object":"whatsapp_business_account","entry":[{"id":"102290129340398","changes":[{"value":{"messaging_product":"whatsapp","messages":[{"id":"wamid.HBgLMTY1MDM4Nzk0MzkVAgASGBQzQTRBNjU5OUFFRTAzODEwMTQ0RgA=","text":{"body":"Caf\u00e9"}}]},"field":"messages"}]}]}`
)

func metaGet(query string) *Request {
	return &Request{Method: "GET", URL: "https://hooks.example.com/meta?" + query}
}

func TestMetaVerify(t *testing.T) {
	t.Parallel()
	p := Meta()
	in := SignInput{Body: []byte(metaBody)}
	good := signed(t, p, in, metaSecret)
	wantID := bodySHA256ID([]byte(metaBody))
	indep := "sha256=" + hmacSHA256Hex(metaSecret, metaBody)
	fx := signingFixture{
		p: p, secret: metaSecret, secretNew: metaSecretNew, in: in, wantEvent: wantID,
		sigHeader: "X-Hub-Signature-256",
		malformed: []string{"garbage", "sha256=", "sha256=" + strings.ToUpper(indep[7:]), indep + "0"},
		missing:   []string{"sha1=" + hmacSHA1Hex(metaSecret, metaBody)},
	}
	cs := fx.cases(t)
	opts := p.DigestCredentialOptions(map[string]string{"verify_token": metaVerifyToken})
	cs = append(cs,
		verifyCase{name: "independent signature over the escaped-unicode raw bytes", req: withHeader(good, "X-Hub-Signature-256", indep), keys: []string{metaSecret}, wantKey: "k0", wantEvent: wantID},
		verifyCase{name: "legacy sha1 header alone is not enough", req: &Request{Method: "POST", Body: []byte(metaBody), Headers: Headers{{Name: "X-Hub-Signature", Value: "sha1=" + hmacSHA1Hex(metaSecret, metaBody)}}}, keys: []string{metaSecret}, wantReason: ReasonMissingSignature},
		verifyCase{name: "handshake: wrong verify token", req: metaGet("hub.mode=subscribe&hub.verify_token=guess&hub.challenge=1158201444"), keys: []string{metaSecret}, params: Params{Options: opts}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "handshake: the stored digest is not the token", req: metaGet("hub.mode=subscribe&hub.verify_token=" + url.QueryEscape(opts["verify_token"]) + "&hub.challenge=1"), keys: []string{metaSecret}, params: Params{Options: opts}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "handshake: token prefix is not the token", req: metaGet("hub.mode=subscribe&hub.verify_token=" + metaVerifyToken[:5] + "&hub.challenge=1"), keys: []string{metaSecret}, params: Params{Options: opts}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "handshake: endpoint without verify_token", req: metaGet("hub.mode=subscribe&hub.verify_token=" + metaVerifyToken + "&hub.challenge=1"), keys: []string{metaSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "handshake: other mode", req: metaGet("hub.mode=unsubscribe&hub.verify_token=" + metaVerifyToken + "&hub.challenge=1"), keys: []string{metaSecret}, params: Params{Options: opts}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "handshake: no token", req: metaGet("hub.mode=subscribe&hub.challenge=1"), keys: []string{metaSecret}, params: Params{Options: opts}, wantReason: ReasonMissingSignature},
		verifyCase{name: "handshake: no challenge", req: metaGet("hub.mode=subscribe&hub.verify_token=" + metaVerifyToken), keys: []string{metaSecret}, params: Params{Options: opts}, wantReason: ReasonMalformedPayload},
		verifyCase{name: "plain GET", req: metaGet(""), keys: []string{metaSecret}, params: Params{Options: opts}, wantReason: ReasonMissingSignature},
	)
	runVerifyCases(t, p, cs)
}

// TestMetaHandshake answers the verification GET against the stored digest, and against a
// token stored as given by a version before digests (until the start-up upgrade rewrites it).
func TestMetaHandshake(t *testing.T) {
	t.Parallel()
	p := Meta()
	for name, opts := range map[string]map[string]string{
		"digest":          p.DigestCredentialOptions(map[string]string{"verify_token": metaVerifyToken}),
		"stored as given": {"verify_token": metaVerifyToken},
	} {
		res, err := p.Verify(metaGet("hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token="+metaVerifyToken), nil,
			Params{Now: fixedNow, Options: opts})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		h := res.Handshake
		if h == nil || res.EventID != "" || h.Status != 200 || string(h.Body) != "1158201444" {
			t.Fatalf("%s: result %+v, reply %+v: want 200 1158201444", name, res, h)
		}
		if ct, _ := h.Headers.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			t.Fatalf("%s: Content-Type %q", name, ct)
		}
	}
}

// TestMetaVerifyTokenDigest: the verify token is kept only as a salted digest, which is kept
// when sent back, never equals another endpoint's digest of the same token, and is checked to
// the byte.
func TestMetaVerifyTokenDigest(t *testing.T) {
	t.Parallel()
	p := Meta()
	given := map[string]string{"verify_token": metaVerifyToken}
	first := p.DigestCredentialOptions(given)
	if given["verify_token"] != metaVerifyToken {
		t.Fatal("DigestCredentialOptions modified its argument")
	}
	stored := first["verify_token"]
	if strings.Contains(stored, metaVerifyToken) || !strings.HasPrefix(stored, "sha256-salted:") {
		t.Fatalf("stored %q: want a digest without the token", stored)
	}
	if again := p.DigestCredentialOptions(first); again["verify_token"] != stored {
		t.Fatalf("a digest sent back became %q, want it kept", again["verify_token"])
	}
	if other := p.DigestCredentialOptions(given); other["verify_token"] == stored {
		t.Fatal("two digests of one token are equal: no fresh salt")
	}
	if err := p.ValidateOptions(first); err != nil {
		t.Fatalf("the digest is refused as an option: %v", err)
	}
	for _, presented := range []string{metaVerifyToken + "x", metaVerifyToken[1:], strings.ToUpper(metaVerifyToken), stored} {
		if credentialMatches(stored, presented) {
			t.Errorf("%q matches the digest of %q", presented, metaVerifyToken)
		}
	}
	if !credentialMatches(stored, metaVerifyToken) {
		t.Error("the token does not match its own digest")
	}
	if got := Stripe().DigestCredentialOptions(given); got["verify_token"] != metaVerifyToken {
		t.Error("a protocol without credential options digested one")
	}
}

func TestMetaValidateOptions(t *testing.T) {
	t.Parallel()
	v := Meta().ValidateOptions
	for _, tc := range []struct {
		name string
		opts map[string]string
		ok   bool
	}{
		{"none", nil, true},
		{"verify_token", map[string]string{"verify_token": "t"}, true},
		{"empty verify_token", map[string]string{"verify_token": ""}, false},
		{"huge verify_token", map[string]string{"verify_token": strings.Repeat("x", 1025)}, false},
		{"unknown option", map[string]string{"app_id": "1"}, false},
		{"stored digest", Meta().DigestCredentialOptions(map[string]string{"verify_token": "t"}), true},
		{"damaged digest", map[string]string{"verify_token": "sha256-salted:AAAA:BBBB"}, false},
	} {
		if err := v(tc.opts); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v", tc.name, err)
		}
	}
}

// TestMetaDocumentedAlgorithm: Meta publishes no vector; Sign is pinned to openssl's HMAC of
// the raw bytes (with the \u00e9 escape kept, as Meta sends it):
// printf '%s' "$metaBody" | openssl dgst -sha256 -hmac "$metaSecret"
func TestMetaDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := Meta().Sign(SignInput{Body: []byte(metaBody)}, []string{metaSecret})
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 1 || h[0].Name != "X-Hub-Signature-256" || h[0].Value != "sha256="+metaOpenSSL {
		t.Fatalf("Sign = %+v", h)
	}
}

func FuzzMetaSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, Meta(), metaSecret, "X-Hub-Signature-256",
		SignInput{Body: []byte(metaBody)}, Params{Now: fixedNow},
		"sha256=", "sha1=0", "=")
}

// FuzzMetaVerificationRequest: any GET URL gets a handshake echoing hub.challenge only when
// the verify token matches, else a rejection; never a panic.
func FuzzMetaVerificationRequest(f *testing.F) {
	p := Meta()
	params := Params{Now: fixedNow, Options: p.DigestCredentialOptions(map[string]string{"verify_token": metaVerifyToken})}
	f.Add("/m?hub.mode=subscribe&hub.verify_token=" + metaVerifyToken + "&hub.challenge=42")
	f.Add("/m?hub.mode=subscribe&hub.verify_token=x&hub.challenge=42")
	f.Add("%%")
	f.Fuzz(func(t *testing.T, u string) {
		res, err := p.Verify(&Request{Method: "GET", URL: u}, nil, params)
		checkAnswer(t, err)
		if err != nil {
			return
		}
		q, qerr := requestQuery(u)
		if qerr != nil || res.Handshake == nil || q.Get("hub.verify_token") != metaVerifyToken || string(res.Handshake.Body) != q.Get("hub.challenge") {
			t.Fatalf("GET %q accepted: %+v", u, res)
		}
	})
}

const metaOpenSSL = "e0f5098740a12509a2efdd5154531023b0558c504a0ad1238621860e1d71d320"
