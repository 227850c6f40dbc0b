package protocol

import (
	"encoding/base64"
	"errors"
	"maps"
	"strings"
	"testing"
)

const (
	basicSecret    = "hooks:correct horse battery staple"
	basicSecretNew = "hooks:rotated-password"
	basicBody      = `{"MessageID":"883953f4-6105-42a2-a16a-77a8eac79483","RecordType":"Delivery"}`
)

func basicReq(auth, body string, extra ...string) *Request {
	r := &Request{Method: "POST", Body: []byte(body)}
	if auth != "\x00" {
		r.Headers = Headers{{Name: "Authorization", Value: auth}}
	}
	for i := 0; i+1 < len(extra); i += 2 {
		r.Headers = append(r.Headers, Header{Name: extra[i], Value: extra[i+1]})
	}
	return r
}

func basicOf(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }

func TestBasicAuthVerify(t *testing.T) {
	t.Parallel()
	p := BasicAuth()
	good := basicOf(basicSecret)
	tests := []struct {
		name       string
		opts       map[string]string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string // empty: the body hash
	}{
		{name: "accepted", req: basicReq(good, basicBody), keys: []string{basicSecret}, wantKey: "k0"},
		{name: "body tampered by one trailing space is still accepted (the body is not signed)", req: basicReq(good, basicBody+" "), keys: []string{basicSecret}, wantKey: "k0"},
		{name: "wrong secret", req: basicReq(good, basicBody), keys: []string{"hooks:other"}, wantReason: ReasonSignatureMismatch},
		{name: "wrong user", req: basicReq(basicOf("other:correct horse battery staple"), basicBody), keys: []string{basicSecret}, wantReason: ReasonSignatureMismatch},
		{name: "password prefix", req: basicReq(basicOf("hooks:correct"), basicBody), keys: []string{basicSecret}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: basicReq(good, basicBody), wantReason: ReasonSignatureMismatch},
		{name: "missing header", req: basicReq("\x00", basicBody), keys: []string{basicSecret}, wantReason: ReasonMissingSignature},
		{name: "other scheme", req: basicReq("Bearer abc", basicBody), keys: []string{basicSecret}, wantReason: ReasonMissingSignature},
		{name: "scheme only", req: basicReq("Basic", basicBody), keys: []string{basicSecret}, wantReason: ReasonMissingSignature},
		{name: "scheme case-insensitive", req: basicReq(strings.Replace(good, "Basic", "bAsIc", 1), basicBody), keys: []string{basicSecret}, wantKey: "k0"},
		{name: "malformed: not base64", req: basicReq("Basic !!!", basicBody), keys: []string{basicSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed: no colon", req: basicReq(basicOf("hookscorrect"), basicBody), keys: []string{basicSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed: unpadded", req: basicReq(strings.TrimRight(basicOf("hooks:pw12"), "="), basicBody), keys: []string{"hooks:pw12"}, wantReason: ReasonMalformedSignature},
		{name: "malformed: empty credentials", req: basicReq("Basic ", basicBody), keys: []string{basicSecret}, wantReason: ReasonMalformedSignature},
		{name: "rotation: old credentials", req: basicReq(good, basicBody), keys: []string{basicSecret, basicSecretNew}, wantKey: "k0"},
		{name: "rotation: new credentials", req: basicReq(basicOf(basicSecretNew), basicBody), keys: []string{basicSecret, basicSecretNew}, wantKey: "k1"},
		{name: "identity: header", opts: map[string]string{"id_header": "X-Event-Id"}, req: basicReq(good, basicBody, "X-Event-Id", "ev_1"), keys: []string{basicSecret}, wantKey: "k0", wantEvent: "ev_1"},
		{name: "identity: header missing", opts: map[string]string{"id_header": "X-Event-Id"}, req: basicReq(good, basicBody), keys: []string{basicSecret}, wantReason: ReasonMissingEventID},
		{name: "identity: pointer", opts: map[string]string{"id_pointer": "/MessageID"}, req: basicReq(good, basicBody), keys: []string{basicSecret}, wantKey: "k0", wantEvent: "883953f4-6105-42a2-a16a-77a8eac79483"},
		{name: "identity: pointer missing", opts: map[string]string{"id_pointer": "/ID"}, req: basicReq(good, basicBody), keys: []string{basicSecret}, wantReason: ReasonMissingEventID},
		{name: "identity: pointer, body not JSON", opts: map[string]string{"id_pointer": "/ID"}, req: basicReq(good, "x=1"), keys: []string{basicSecret}, wantReason: ReasonMalformedPayload},
		{name: "credentials checked before identity", opts: map[string]string{"id_pointer": "/ID"}, req: basicReq(basicOf("a:b"), "x=1"), keys: []string{basicSecret}, wantReason: ReasonSignatureMismatch},
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
}

// TestBasicAuthPublishedVector is RFC 7617 section 2: user "Aladdin", password "open
// sesame" give "Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==".
func TestBasicAuthPublishedVector(t *testing.T) {
	t.Parallel()
	p := BasicAuth()
	const secret, want = "Aladdin:open sesame", "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
	req := basicReq(want, basicBody)
	res, err := p.Verify(req, keysFor(t, p, secret), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	h, err := p.Sign(SignInput{Body: []byte(basicBody)}, []string{secret, "other:one"})
	if err != nil {
		t.Fatal(err)
	}
	if got := header(&Request{Headers: h}, "Authorization"); got != want {
		t.Fatalf("Sign = %q, want %q", got, want)
	}
}

func TestBasicAuthParseSecret(t *testing.T) {
	t.Parallel()
	p := BasicAuth()
	for _, tc := range []struct {
		secret string
		ok     bool
	}{
		{"user:pw", true}, {"user:pw:with:colons", true}, {"user:", false}, {":pw", false}, {"nocolon", false}, {"", false}, {"user:p\nw", false},
	} {
		_, err := p.ParseSecret(tc.secret)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrInvalidSecret)) {
			t.Errorf("ParseSecret(%q) = %v", tc.secret, err)
		}
		if err != nil && tc.secret != "" && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("ParseSecret error quotes the secret: %v", err)
		}
	}
}

func TestStaticCredentialOptions(t *testing.T) {
	t.Parallel()
	for _, p := range []*Protocol{BasicAuth(), BearerToken(), SharedToken()} {
		for _, tc := range []struct {
			opts    map[string]string
			wantErr string
		}{
			{nil, ""},
			{map[string]string{"id_header": "X-Id"}, ""},
			{map[string]string{"id_pointer": "/data/id"}, ""},
			{map[string]string{"id_header": "X-Id", "id_pointer": "/id"}, "id_pointer"},
			{map[string]string{"id_pointer": "data"}, "option id_pointer"},
			{map[string]string{"id_header": "X Id"}, "option id_header"},
			{map[string]string{"tolerance": "5m"}, `unknown option "tolerance"`},
		} {
			err := p.ValidateOptions(tc.opts)
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("%s: ValidateOptions(%v) = %v, want %q", p.Name, tc.opts, err, tc.wantErr)
			}
		}
		if !p.StaticCredential || p.SignsTimestamp || p.NeedsURL {
			t.Errorf("%s: descriptive flags wrong: %+v", p.Name, p)
		}
	}
}

// TestStaticCredentialIdentityIsNotTheCredential: with id_header naming the very header that
// carries the credential (Authorization for basic-auth and bearer-token, the token header for
// shared-token), the event identity would be the secret itself: stored in plain text as the
// claim's event id and returned to callers (README: secrets never in the DB or API responses),
// and the same for every delivery, so all but the first would be DUPLICATE. Such options must
// be refused when the endpoint is configured, and never yield the credential as an identity.
func TestStaticCredentialIdentityIsNotTheCredential(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p       *Protocol
		secret  string
		options map[string]string
	}{
		{BasicAuth(), "hook:s3cr3t-pass", map[string]string{"id_header": "authorization"}},
		{BearerToken(), "tok_abcdef0123456789", map[string]string{"id_header": "Authorization"}},
		{SharedToken(), "shared-token-value-123", map[string]string{"id_header": "x-webhook-token"}},
		{SharedToken(), "shared-token-value-123", map[string]string{"header": "X-Gitlab-Token", "id_header": "X-GITLAB-TOKEN"}},
	} {
		t.Run(tc.p.Name+"/"+tc.options["id_header"], func(t *testing.T) {
			t.Parallel()
			if err := tc.p.ValidateOptions(tc.options); err == nil {
				t.Errorf("ValidateOptions(%v) accepted an identity header that carries the credential", tc.options)
			}
			// Sign with the options but without id_header, then verify with them: the request
			// carries the credential in the named header.
			signOpts := maps.Clone(tc.options)
			delete(signOpts, "id_header")
			h, err := tc.p.Sign(SignInput{Body: []byte(`{"id":"evt_1"}`), Options: signOpts}, []string{tc.secret})
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Method: "POST", URL: "https://hooks.example.com/in", Headers: h, Body: []byte(`{"id":"evt_1"}`)}
			res, err := tc.p.Verify(req, keysFor(t, tc.p, tc.secret), Params{Now: fixedNow, Options: tc.options})
			if err == nil && (strings.Contains(res.EventID, tc.secret[len(tc.secret)-6:]) || strings.Contains(res.EventID, "Basic ")) {
				t.Fatalf("EventID %q is the credential", res.EventID)
			}
		})
	}
}

func FuzzBasicAuthHeader(f *testing.F) {
	p := BasicAuth()
	keys := keysFor(f, p, basicSecret)
	f.Add("Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==", uint16(8), byte('A'))
	f.Fuzz(func(t *testing.T, auth string, pos uint16, repl byte) {
		_, err := p.Verify(basicReq(auth, basicBody), keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		// Changing any byte of the credentials (after "Basic ") never authenticates.
		good := []byte(basicOf(basicSecret))
		i := len("Basic ") + int(pos)%(len(good)-len("Basic "))
		if good[i] == repl {
			return
		}
		good[i] = repl
		if _, err := p.Verify(basicReq(string(good), basicBody), keys, Params{Now: fixedNow}); err == nil || !signatureStage(ReasonOf(err)) {
			t.Fatalf("credentials with byte %d changed: %v", i, err)
		}
	})
}
