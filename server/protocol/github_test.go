package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
	"testing"
	"time"
)

const (
	githubSecret    = "It's a Secret to Everybody"
	githubSecretNew = "a newer secret"
	githubBody      = `{"zen":"Design for failure.","hook_id":1}`
	githubDelivery  = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
)

func githubMAC(newHash func() hash.Hash, secret, body string) string {
	m := hmac.New(newHash, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func githubRequest(body string, headers ...string) *Request {
	req := &Request{Method: "POST", Body: []byte(body)}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Headers = append(req.Headers, Header{Name: headers[i], Value: headers[i+1]})
	}
	return req
}

func TestGitHubVerify(t *testing.T) {
	t.Parallel()
	p := GitHub()
	sig256 := "sha256=" + githubMAC(sha256.New, githubSecret, githubBody)
	sig1 := "sha1=" + githubMAC(sha1.New, githubSecret, githubBody)
	wrong256 := "sha256=" + strings.Repeat("ab", 32)
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
	}{
		{name: "accepted", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantKey: "k0"},
		{name: "body tampered by one trailing space", req: githubRequest(githubBody+" ", "X-Hub-Signature-256", sig256, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256, "X-GitHub-Delivery", githubDelivery), keys: []string{"not it"}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256, "X-GitHub-Delivery", githubDelivery), wantReason: ReasonSignatureMismatch},
		{name: "rotation: second key matches", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecretNew, githubSecret}, wantKey: "k1"},
		{name: "rotation: new secret, both keys", req: githubRequest(githubBody, "X-Hub-Signature-256", "sha256="+githubMAC(sha256.New, githubSecretNew, githubBody), "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret, githubSecretNew}, wantKey: "k1"},
		{name: "both headers, SHA-256 decides", req: githubRequest(githubBody, "X-Hub-Signature", sig1, "X-Hub-Signature-256", sig256, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantKey: "k0"},
		{name: "bad SHA-256 is not rescued by a good SHA-1", req: githubRequest(githubBody, "X-Hub-Signature", sig1, "X-Hub-Signature-256", wrong256, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonSignatureMismatch},
		{name: "malformed SHA-256 is not rescued by a good SHA-1", req: githubRequest(githubBody, "X-Hub-Signature", sig1, "X-Hub-Signature-256", "sha256=zz", "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "legacy SHA-1 only (older GHES)", req: githubRequest(githubBody, "X-Hub-Signature", sig1, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantKey: "k0"},
		{name: "legacy SHA-1 tampered body", req: githubRequest(githubBody+" ", "X-Hub-Signature", sig1, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonSignatureMismatch},
		{name: "empty SHA-256 falls back to SHA-1", req: githubRequest(githubBody, "X-Hub-Signature-256", "", "X-Hub-Signature", sig1, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantKey: "k0"},
		{name: "unknown scheme sha512", req: githubRequest(githubBody, "X-Hub-Signature-256", "sha512="+strings.Repeat("ab", 64), "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMissingSignature},
		{name: "sha1 prefix in the SHA-256 header", req: githubRequest(githubBody, "X-Hub-Signature-256", sig1, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMissingSignature},
		{name: "malformed hex", req: githubRequest(githubBody, "X-Hub-Signature-256", "sha256=xyz"+sig256[10:], "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "uppercase hex", req: githubRequest(githubBody, "X-Hub-Signature-256", "sha256="+strings.ToUpper(sig256[7:]), "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "truncated hex", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256[:len(sig256)-2], "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "SHA-1 length in the SHA-256 header", req: githubRequest(githubBody, "X-Hub-Signature-256", "sha256="+sig1[5:], "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "no prefix", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256[7:], "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "empty prefix value", req: githubRequest(githubBody, "X-Hub-Signature-256", "sha256=", "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "empty header", req: githubRequest(githubBody, "X-Hub-Signature-256", "", "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "both headers empty", req: githubRequest(githubBody, "X-Hub-Signature-256", "", "X-Hub-Signature", "", "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMalformedSignature},
		{name: "missing header", req: githubRequest(githubBody, "X-GitHub-Delivery", githubDelivery), keys: []string{githubSecret}, wantReason: ReasonMissingSignature},
		{name: "missing header and no keys", req: githubRequest(githubBody, "X-GitHub-Delivery", githubDelivery), wantReason: ReasonMissingSignature},
		{name: "missing delivery id", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256), keys: []string{githubSecret}, wantReason: ReasonMissingEventID},
		{name: "empty delivery id", req: githubRequest(githubBody, "X-Hub-Signature-256", sig256, "X-GitHub-Delivery", ""), keys: []string{githubSecret}, wantReason: ReasonMissingEventID},
		{name: "bad signature beats missing delivery id", req: githubRequest(githubBody, "X-Hub-Signature-256", wrong256), keys: []string{githubSecret}, wantReason: ReasonSignatureMismatch},
		{name: "header names case-insensitive", req: githubRequest(githubBody, "x-hub-signature-256", sig256, "x-github-delivery", githubDelivery), keys: []string{githubSecret}, wantKey: "k0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// GitHub signs no timestamp: a zero clock must not matter.
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != header(tc.req, "X-GitHub-Delivery") {
				t.Fatalf("EventID = %q", res.EventID)
			}
		})
	}
}

// TestGitHubPublishedVector is the example in GitHub's "Validating webhook deliveries".
func TestGitHubPublishedVector(t *testing.T) {
	t.Parallel()
	const (
		secret = "It's a Secret to Everybody"
		body   = "Hello, World!"
		want   = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	)
	p := GitHub()
	req := githubRequest(body, "X-Hub-Signature-256", want, "X-GitHub-Delivery", githubDelivery)
	res, err := p.Verify(req, keysFor(t, p, secret), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	h, err := p.Sign(SignInput{Body: []byte(body), EventID: githubDelivery}, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Get("X-Hub-Signature-256"); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestGitHubEmptySecretNeverAuthenticates(t *testing.T) {
	t.Parallel()
	p := GitHub()
	// go-github's ValidatePayload accepts a request with no signature when the secret is
	// empty; here an empty key never matches, even a correct HMAC under the empty key.
	req := githubRequest(githubBody, "X-Hub-Signature-256", "sha256="+githubMAC(sha256.New, "", githubBody), "X-GitHub-Delivery", githubDelivery)
	res, err := p.Verify(req, []Key{{ID: "empty"}}, Params{})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	if _, err := p.ParseSecret(""); !errors.Is(err, ErrInvalidSecret) {
		t.Fatalf("ParseSecret(\"\") = %v, want ErrInvalidSecret", err)
	}
}

func TestGitHubSign(t *testing.T) {
	t.Parallel()
	p := GitHub()
	h, err := p.Sign(SignInput{Body: []byte(githubBody), EventID: githubDelivery, Timestamp: time.Unix(1, 0)}, []string{githubSecret, "ignored second secret"})
	if err != nil {
		t.Fatal(err)
	}
	want := Headers{
		{Name: "X-GitHub-Delivery", Value: githubDelivery},
		{Name: "X-Hub-Signature", Value: "sha1=" + githubMAC(sha1.New, githubSecret, githubBody)},
		{Name: "X-Hub-Signature-256", Value: "sha256=" + githubMAC(sha256.New, githubSecret, githubBody)},
	}
	if len(h) != len(want) {
		t.Fatalf("Sign = %+v", h)
	}
	for i := range want {
		if h[i] != want[i] {
			t.Fatalf("header %d = %+v, want %+v", i, h[i], want[i])
		}
	}
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secret", SignInput{Body: []byte(githubBody), EventID: githubDelivery}, nil},
		{"empty secret", SignInput{Body: []byte(githubBody), EventID: githubDelivery}, []string{""}},
		{"no delivery id", SignInput{Body: []byte(githubBody)}, []string{githubSecret}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}
