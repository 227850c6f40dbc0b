package protocol

import (
	"testing"
)

const (
	bearerSecret    = "mF_9.B5f-4.1JqM"
	bearerSecretNew = "tok_2b1d0c9e8f7a6b5c4d3e2f1a0b9c8d7e"
)

func TestBearerTokenVerify(t *testing.T) {
	t.Parallel()
	p := BearerToken()
	tests := []struct {
		name       string
		opts       map[string]string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: basicReq("Bearer "+bearerSecret, basicBody), keys: []string{bearerSecret}, wantKey: "k0"},
		{name: "body tampered by one trailing space is still accepted (the body is not signed)", req: basicReq("Bearer "+bearerSecret, basicBody+" "), keys: []string{bearerSecret}, wantKey: "k0"},
		{name: "wrong secret", req: basicReq("Bearer "+bearerSecret, basicBody), keys: []string{"other"}, wantReason: ReasonSignatureMismatch},
		{name: "token prefix", req: basicReq("Bearer mF_9", basicBody), keys: []string{bearerSecret}, wantReason: ReasonSignatureMismatch},
		{name: "missing header", req: basicReq("\x00", basicBody), keys: []string{bearerSecret}, wantReason: ReasonMissingSignature},
		{name: "other scheme", req: basicReq("Basic "+bearerSecret, basicBody), keys: []string{bearerSecret}, wantReason: ReasonMissingSignature},
		{name: "bare token without scheme", req: basicReq(bearerSecret, basicBody), keys: []string{bearerSecret}, wantReason: ReasonMissingSignature},
		{name: "scheme case-insensitive", req: basicReq("bearer "+bearerSecret, basicBody), keys: []string{bearerSecret}, wantKey: "k0"},
		{name: "malformed: empty token", req: basicReq("Bearer ", basicBody), keys: []string{bearerSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed: trailing space", req: basicReq("Bearer "+bearerSecret+" ", basicBody), keys: []string{bearerSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed: '=' inside", req: basicReq("Bearer a=b", basicBody), keys: []string{bearerSecret}, wantReason: ReasonMalformedSignature},
		{name: "rotation: old token", req: basicReq("Bearer "+bearerSecret, basicBody), keys: []string{bearerSecret, bearerSecretNew}, wantKey: "k0"},
		{name: "rotation: new token", req: basicReq("Bearer "+bearerSecretNew, basicBody), keys: []string{bearerSecret, bearerSecretNew}, wantKey: "k1"},
		{name: "identity: header", opts: map[string]string{"id_header": "X-Event-Id"}, req: basicReq("Bearer "+bearerSecret, basicBody, "X-Event-Id", "ev_1"), keys: []string{bearerSecret}, wantKey: "k0", wantEvent: "ev_1"},
		{name: "identity: header missing", opts: map[string]string{"id_header": "X-Event-Id"}, req: basicReq("Bearer "+bearerSecret, basicBody), keys: []string{bearerSecret}, wantReason: ReasonMissingEventID},
		{name: "identity: pointer", opts: map[string]string{"id_pointer": "/RecordType"}, req: basicReq("Bearer "+bearerSecret, basicBody), keys: []string{bearerSecret}, wantKey: "k0", wantEvent: "Delivery"},
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

// TestBearerTokenPublishedVector is RFC 6750 section 2.1's example request:
// "Authorization: Bearer mF_9.B5f-4.1JqM".
func TestBearerTokenPublishedVector(t *testing.T) {
	t.Parallel()
	p := BearerToken()
	req := basicReq("Bearer mF_9.B5f-4.1JqM", basicBody)
	res, err := p.Verify(req, keysFor(t, p, "mF_9.B5f-4.1JqM"), Params{})
	checkOutcome(t, res, err, 0, "k0", req)
	h, err := p.Sign(SignInput{Body: []byte(basicBody), EventID: "ev_1", Options: map[string]string{"id_header": "X-Id"}}, []string{"mF_9.B5f-4.1JqM"})
	if err != nil {
		t.Fatal(err)
	}
	if got := header(&Request{Headers: h}, "Authorization"); got != "Bearer mF_9.B5f-4.1JqM" {
		t.Fatalf("Sign = %q", got)
	}
	if got := header(&Request{Headers: h}, "X-Id"); got != "ev_1" {
		t.Fatalf("Sign id header = %q", got)
	}
}

func TestBearerTokenParseSecret(t *testing.T) {
	t.Parallel()
	p := BearerToken()
	for _, tc := range []struct {
		secret string
		ok     bool
	}{
		{"abc", true}, {"a.b-c_d~e+f/g==", true}, {"", false}, {"=", false}, {"a b", false}, {"a=b", false}, {"tok\n", false},
	} {
		if _, err := p.ParseSecret(tc.secret); (err == nil) != tc.ok {
			t.Errorf("ParseSecret(%q) = %v", tc.secret, err)
		}
	}
}

func FuzzBearerTokenHeader(f *testing.F) {
	p := BearerToken()
	keys := keysFor(f, p, bearerSecret)
	f.Add("Bearer mF_9.B5f-4.1JqM", uint16(3), byte('x'))
	f.Fuzz(func(t *testing.T, auth string, pos uint16, repl byte) {
		_, err := p.Verify(basicReq(auth, basicBody), keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		good := []byte("Bearer " + bearerSecret)
		i := len("Bearer ") + int(pos)%len(bearerSecret)
		if good[i] == repl {
			return
		}
		good[i] = repl
		if _, err := p.Verify(basicReq(string(good), basicBody), keys, Params{Now: fixedNow}); err == nil || !signatureStage(ReasonOf(err)) {
			t.Fatalf("token with byte %d changed: %v", i, err)
		}
	})
}
