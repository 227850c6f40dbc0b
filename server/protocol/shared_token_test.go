package protocol

import "testing"

const (
	sharedSecret    = "6d1c1f5e0b2a4c7d9e8f"
	sharedSecretNew = "rotated-0f9e8d7c6b5a"
)

func TestSharedTokenVerify(t *testing.T) {
	t.Parallel()
	p := SharedToken()
	tok := func(name, v string, extra ...string) *Request {
		r := &Request{Method: "POST", Headers: Headers{{Name: name, Value: v}}, Body: []byte(basicBody)}
		for i := 0; i+1 < len(extra); i += 2 {
			r.Headers = append(r.Headers, Header{Name: extra[i], Value: extra[i+1]})
		}
		return r
	}
	gitlab := map[string]string{"header": "X-Gitlab-Token", "id_header": "Idempotency-Key"}
	tests := []struct {
		name       string
		opts       map[string]string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: tok("X-Webhook-Token", sharedSecret), keys: []string{sharedSecret}, wantKey: "k0"},
		{name: "header name case-insensitive", req: tok("x-webhook-token", sharedSecret), keys: []string{sharedSecret}, wantKey: "k0"},
		{name: "wrong secret", req: tok("X-Webhook-Token", sharedSecret), keys: []string{"other"}, wantReason: ReasonSignatureMismatch},
		{name: "token with a trailing space", req: tok("X-Webhook-Token", sharedSecret+" "), keys: []string{sharedSecret}, wantReason: ReasonSignatureMismatch},
		{name: "missing header", req: tok("X-Other", sharedSecret), keys: []string{sharedSecret}, wantReason: ReasonMissingSignature},
		{name: "malformed: empty", req: tok("X-Webhook-Token", ""), keys: []string{sharedSecret}, wantReason: ReasonMalformedSignature},
		{name: "rotation: old token", req: tok("X-Webhook-Token", sharedSecret), keys: []string{sharedSecret, sharedSecretNew}, wantKey: "k0"},
		{name: "rotation: new token", req: tok("X-Webhook-Token", sharedSecretNew), keys: []string{sharedSecret, sharedSecretNew}, wantKey: "k1"},
		{name: "configured header", opts: gitlab, req: tok("X-Gitlab-Token", sharedSecret, "Idempotency-Key", "f3b1e0a2"), keys: []string{sharedSecret}, wantKey: "k0", wantEvent: "f3b1e0a2"},
		{name: "configured header, default one sent", opts: gitlab, req: tok("X-Webhook-Token", sharedSecret, "Idempotency-Key", "f3b1e0a2"), keys: []string{sharedSecret}, wantReason: ReasonMissingSignature},
		{name: "identity: header missing", opts: gitlab, req: tok("X-Gitlab-Token", sharedSecret), keys: []string{sharedSecret}, wantReason: ReasonMissingEventID},
		{name: "identity: pointer", opts: map[string]string{"id_pointer": "/MessageID"}, req: tok("X-Webhook-Token", sharedSecret), keys: []string{sharedSecret}, wantKey: "k0", wantEvent: "883953f4-6105-42a2-a16a-77a8eac79483"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow, Options: tc.opts})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			want := tc.wantEvent
			if want == "" {
				want = bodySHA256ID(tc.req.Body)
			}
			if tc.wantReason == 0 && res.EventID != want {
				t.Fatalf("EventID = %q, want %q", res.EventID, want)
			}
		})
	}
	if err := p.ValidateOptions(map[string]string{"header": "X Token"}); err == nil {
		t.Fatal("a header option with a space was accepted")
	}
	h, err := p.Sign(SignInput{Body: []byte(basicBody), EventID: "f3b1e0a2", Options: gitlab}, []string{sharedSecret, sharedSecretNew})
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Headers: h, Body: []byte(basicBody)}
	if header(req, "X-Gitlab-Token") != sharedSecret || header(req, "Idempotency-Key") != "f3b1e0a2" {
		t.Fatalf("Sign = %+v", h)
	}
	for _, s := range []string{"", " x", "x\x00y"} {
		if _, err := p.ParseSecret(s); err == nil {
			t.Errorf("ParseSecret(%q) accepted", s)
		}
	}
}

// FuzzSharedTokenHeader drives the token comparison with any header value: an answer or a
// rejection, never a panic; and the token with one byte changed never authenticates.
func FuzzSharedTokenHeader(f *testing.F) {
	p := SharedToken()
	keys := keysFor(f, p, sharedSecret)
	f.Add(sharedSecret, uint16(3), byte('x'))
	f.Add(" "+sharedSecret+" ", uint16(0), byte(0))
	f.Add("", uint16(1), byte(0xff))
	f.Fuzz(func(t *testing.T, token string, pos uint16, repl byte) {
		req := func(v string) *Request {
			return &Request{Method: "POST", Headers: Headers{{Name: "X-Webhook-Token", Value: v}}, Body: []byte(basicBody)}
		}
		_, err := p.Verify(req(token), keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		good := []byte(sharedSecret)
		i := int(pos) % len(good)
		if good[i] == repl {
			return
		}
		good[i] = repl
		if _, err := p.Verify(req(string(good)), keys, Params{Now: fixedNow}); err == nil || !signatureStage(ReasonOf(err)) {
			t.Fatalf("token with byte %d changed to %q: %v", i, repl, err)
		}
	})
}
