package protocol

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Vectors: GitLab publishes none for its signed webhooks. Since MR !230944 says the headers and
// format follow the Standard Webhooks spec (and validates with the standardwebhooks library),
// the spec libraries' vector is used (standard-webhooks/standard-webhooks libraries, TestWebhookSign:
// secret whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw, id msg_p5jXN8AQM9LWM0D4loKWxJek, timestamp
// 1614265330, body {"test": 2432232314} -> v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=),
// recomputed independently with Python hmac. The classic token scheme has nothing to compute.
const (
	gitlabSigning    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	gitlabSigningNew = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX"
	gitlabVecID      = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	gitlabVecBody    = `{"test": 2432232314}`
	gitlabVecSig     = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	gitlabToken      = "my-gitlab-secret-token"
	gitlabUUID       = "3f6c2b1e-8f4a-4c2e-9b7d-2a1e5c6d7f80"
)

var gitlabVecNow = time.Unix(1614265330, 0)

func gitlabSignedRequest(id string, ts int64, sig, body string) *Request {
	return &Request{Method: "POST", Body: []byte(body), Headers: Headers{
		{Name: "Idempotency-Key", Value: id},
		{Name: "webhook-id", Value: id},
		{Name: "webhook-timestamp", Value: strconv.FormatInt(ts, 10)},
		{Name: "webhook-signature", Value: sig},
		{Name: "X-Gitlab-Event", Value: "Push Hook"},
	}}
}

func gitlabTokenRequest(token string, extra ...Header) *Request {
	h := Headers{{Name: "X-Gitlab-Event", Value: "Push Hook"}, {Name: "X-Gitlab-Token", Value: token}}
	return &Request{Method: "POST", Body: []byte(`{"object_kind":"push"}`), Headers: append(h, extra...)}
}

func gitlabSignedBy(t testing.TB, secret string, ts time.Time, body string) *Request {
	t.Helper()
	h, err := GitLab().Sign(SignInput{Body: []byte(body), EventID: gitlabUUID, Timestamp: ts}, []string{secret})
	if err != nil {
		t.Fatal(err)
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

func TestGitLabVerify(t *testing.T) {
	t.Parallel()
	p := GitLab()
	vec := gitlabSignedRequest(gitlabVecID, gitlabVecNow.Unix(), gitlabVecSig, gitlabVecBody)
	vecParams := Params{Now: gitlabVecNow, Tolerance: 300 * time.Second}
	idem := Header{Name: "Idempotency-Key", Value: gitlabUUID}
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		// Signed deliveries.
		{name: "signed: spec vector", req: vec, keys: []string{gitlabSigning}, params: vecParams, wantKey: "k0", wantEvent: gitlabVecID},
		{name: "signed: token without the whsec_ prefix", req: vec, keys: []string{strings.TrimPrefix(gitlabSigning, "whsec_")}, params: vecParams, wantKey: "k0", wantEvent: gitlabVecID},
		{name: "signed: body tampered by one trailing space", req: withBody(vec, []byte(gitlabVecBody+" ")), keys: []string{gitlabSigning}, params: vecParams, wantReason: ReasonSignatureMismatch},
		{name: "signed: id tampered", req: withHeader(vec, "webhook-id", "msg_other"), keys: []string{gitlabSigning}, params: vecParams, wantReason: ReasonSignatureMismatch},
		{name: "signed: wrong secret", req: vec, keys: []string{gitlabSigningNew}, params: vecParams, wantReason: ReasonSignatureMismatch},
		{name: "signed: rotation, second key", req: vec, keys: []string{gitlabSigningNew, gitlabSigning}, params: vecParams, wantKey: "k1", wantEvent: gitlabVecID},
		{name: "signed: several signatures, one matches", req: withHeader(vec, "webhook-signature", "v1,"+strings.Repeat("A", 43)+"= "+gitlabVecSig), keys: []string{gitlabSigning}, params: vecParams, wantKey: "k0", wantEvent: gitlabVecID},
		{name: "signed: v1a ignored beside v1", req: withHeader(vec, "webhook-signature", "v1a,abc "+gitlabVecSig), keys: []string{gitlabSigning}, params: vecParams, wantKey: "k0", wantEvent: gitlabVecID},
		{name: "signed: only unknown versions", req: withHeader(vec, "webhook-signature", "v2,abc"), keys: []string{gitlabSigning}, params: vecParams, wantReason: ReasonMissingSignature},
		{name: "signed: malformed signature", req: withHeader(vec, "webhook-signature", "v1,not-base64"), keys: []string{gitlabSigning}, params: vecParams, wantReason: ReasonMalformedSignature},
		{name: "signed: empty signature header", req: withHeader(vec, "webhook-signature", ""), keys: []string{gitlabSigning}, params: vecParams, wantReason: ReasonMalformedSignature},
		{name: "signed: missing timestamp", req: withoutHeader(vec, "webhook-timestamp"), keys: []string{gitlabSigning}, params: vecParams, wantReason: ReasonMissingTimestamp},
		{name: "signed: missing webhook-id", req: withoutHeader(vec, "webhook-id"), keys: []string{gitlabSigning}, params: vecParams, wantReason: ReasonMissingEventID},
		{name: "signed: stale", req: vec, keys: []string{gitlabSigning}, params: Params{Now: gitlabVecNow.Add(301 * time.Second), Tolerance: 300 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "signed: future", req: vec, keys: []string{gitlabSigning}, params: Params{Now: gitlabVecNow.Add(-301 * time.Second), Tolerance: 300 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		// A hook with both tokens sends both headers; a signing token not (yet) added here, or a
		// broken signature, falls back to the token unless the endpoint requires signatures.
		{name: "signed: broken signature falls back to a valid token", req: withHeader(withHeader(withHeader(vec, "webhook-signature", "v1,"+strings.Repeat("A", 43)+"="), "X-Gitlab-Token", gitlabToken), "Idempotency-Key", gitlabVecID), keys: []string{gitlabSigning, gitlabToken}, params: vecParams, wantKey: "k1", wantEvent: gitlabVecID},
		{name: "signed: no signing token here, the token authenticates", req: withHeader(withHeader(vec, "X-Gitlab-Token", gitlabToken), "Idempotency-Key", gitlabVecID), keys: []string{gitlabToken}, params: vecParams, wantKey: "k0", wantEvent: gitlabVecID},
		{name: "signed: stale signature, the token authenticates", req: withHeader(withHeader(vec, "X-Gitlab-Token", gitlabToken), "Idempotency-Key", gitlabVecID), keys: []string{gitlabSigning, gitlabToken}, params: Params{Now: gitlabVecNow.Add(301 * time.Second), Tolerance: 300 * time.Second}, wantKey: "k1", wantEvent: gitlabVecID},
		{name: "signed: broken signature and a wrong token: the signature's reason", req: withHeader(withHeader(vec, "webhook-signature", "v1,"+strings.Repeat("A", 43)+"="), "X-Gitlab-Token", "not-the-token"), keys: []string{gitlabSigning, gitlabToken}, params: vecParams, wantReason: ReasonSignatureMismatch},
		{name: "signed: broken signature does not fall back when signatures are required", req: withHeader(withHeader(withHeader(vec, "webhook-signature", "v1,"+strings.Repeat("A", 43)+"="), "X-Gitlab-Token", gitlabToken), "Idempotency-Key", gitlabVecID), keys: []string{gitlabSigning, gitlabToken}, params: Params{Now: gitlabVecNow, Options: map[string]string{"require_signature": "true"}}, wantReason: ReasonSignatureMismatch},
		{name: "signed: a token-only key cannot verify signatures unless it is base64", req: vec, keys: []string{gitlabToken}, params: vecParams, wantReason: ReasonSignatureMismatch},
		{name: "signed: Sign round trip", req: gitlabSignedBy(t, gitlabSigningNew, fixedNow, `{"object_kind":"push"}`), keys: []string{gitlabSigning, gitlabSigningNew}, wantKey: "k1", wantEvent: gitlabUUID},

		// Classic token deliveries.
		{name: "token: accepted", req: gitlabTokenRequest(gitlabToken, idem), keys: []string{gitlabToken}, wantKey: "k0", wantEvent: gitlabUUID},
		{name: "token: body is not authenticated", req: withBody(gitlabTokenRequest(gitlabToken, idem), []byte("anything ")), keys: []string{gitlabToken}, wantKey: "k0", wantEvent: gitlabUUID},
		{name: "token: wrong token", req: gitlabTokenRequest("not-the-token", idem), keys: []string{gitlabToken}, wantReason: ReasonSignatureMismatch},
		{name: "token: prefix of the token", req: gitlabTokenRequest(gitlabToken[:5], idem), keys: []string{gitlabToken}, wantReason: ReasonSignatureMismatch},
		{name: "token: case differs", req: gitlabTokenRequest(strings.ToUpper(gitlabToken), idem), keys: []string{gitlabToken}, wantReason: ReasonSignatureMismatch},
		{name: "token: rotation, second key", req: gitlabTokenRequest(gitlabToken, idem), keys: []string{"old-token", gitlabToken}, wantKey: "k1", wantEvent: gitlabUUID},
		{name: "token: empty", req: gitlabTokenRequest("", idem), keys: []string{gitlabToken}, wantReason: ReasonMalformedSignature},
		{name: "token: no keys", req: gitlabTokenRequest(gitlabToken, idem), wantReason: ReasonSignatureMismatch},
		{name: "token: Event-UUID when no Idempotency-Key", req: gitlabTokenRequest(gitlabToken, Header{Name: "X-Gitlab-Event-UUID", Value: "uuid-2"}), keys: []string{gitlabToken}, wantKey: "k0", wantEvent: "uuid-2:" + bodySHA256ID([]byte(`{"object_kind":"push"}`))},
		{name: "token: Idempotency-Key preferred", req: gitlabTokenRequest(gitlabToken, Header{Name: "X-Gitlab-Event-UUID", Value: "uuid-2"}, idem), keys: []string{gitlabToken}, wantKey: "k0", wantEvent: gitlabUUID},
		{name: "token: no identity", req: gitlabTokenRequest(gitlabToken), keys: []string{gitlabToken}, wantReason: ReasonMissingEventID},
		{name: "token: refused when the endpoint requires signatures", req: gitlabTokenRequest(gitlabToken, idem), keys: []string{gitlabToken}, params: Params{Now: fixedNow, Options: map[string]string{"require_signature": "true"}}, wantReason: ReasonMissingSignature},
		{name: "signed: accepted when the endpoint requires signatures", req: vec, keys: []string{gitlabSigning}, params: Params{Now: gitlabVecNow, Options: map[string]string{"require_signature": "true"}}, wantKey: "k0", wantEvent: gitlabVecID},
		{name: "neither header", req: &Request{Body: []byte("{}")}, keys: []string{gitlabToken}, wantReason: ReasonMissingSignature},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow, Tolerance: 300 * time.Second}
			}
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

func TestGitLabSign(t *testing.T) {
	t.Parallel()
	p := GitLab()
	h, err := p.Sign(SignInput{Body: []byte(gitlabVecBody), EventID: gitlabVecID, Timestamp: gitlabVecNow}, []string{gitlabSigning})
	if err != nil {
		t.Fatal(err)
	}
	if got := header(&Request{Headers: h}, "webhook-signature"); got != gitlabVecSig {
		t.Fatalf("webhook-signature = %q, want the spec vector", got)
	}
	if got := header(&Request{Headers: h}, "Idempotency-Key"); got != gitlabVecID {
		t.Fatalf("Idempotency-Key = %q", got)
	}
	h, err = p.Sign(SignInput{Body: []byte("{}"), EventID: "e1"}, []string{gitlabToken})
	if err != nil || header(&Request{Headers: h}, "X-Gitlab-Token") != gitlabToken {
		t.Fatalf("token Sign = %+v, %v", h, err)
	}
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{EventID: "e", Timestamp: fixedNow}, nil},
		{"no event id", SignInput{Timestamp: fixedNow}, []string{gitlabSigning}},
		{"signing without timestamp", SignInput{EventID: "e"}, []string{gitlabSigning}},
		{"bad whsec", SignInput{EventID: "e", Timestamp: fixedNow}, []string{"whsec_!!!"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}

func TestGitLabSecretsAndOptions(t *testing.T) {
	t.Parallel()
	p := GitLab()
	s, v, err := p.ExampleSecret()
	if err != nil || s != v || !strings.HasPrefix(s, "whsec_") {
		t.Fatalf("ExampleSecret = %q, %q, %v", s, v, err)
	}
	for _, ok := range []string{s, gitlabToken, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if _, err := p.ParseSecret(ok); err != nil {
			t.Errorf("ParseSecret: %v", err)
		}
	}
	for _, bad := range []string{"", "whsec_***", "two words", gitlabToken + "\n"} {
		if _, err := p.ParseSecret(bad); err == nil {
			t.Errorf("ParseSecret(%q) accepted", bad)
		}
	}
	for opts, ok := range map[string]bool{"": true, "require_signature=true": true, "require_signature=false": true, "require_signature=yes": false, "other=1": false} {
		m := map[string]string{}
		if k, v, found := strings.Cut(opts, "="); found {
			m[k] = v
		}
		if err := p.ValidateOptions(m); (err == nil) != ok {
			t.Errorf("ValidateOptions(%q) = %v", opts, err)
		}
	}
}

func FuzzGitLabHeaders(f *testing.F) {
	p := GitLab()
	keys := keysFor(f, p, gitlabSigning, gitlabToken)
	params := Params{Now: fixedNow, Tolerance: 300 * time.Second}
	f.Add(gitlabVecSig, "1614265330", gitlabToken, []byte(gitlabVecBody), uint16(0), byte('A'))
	f.Fuzz(func(t *testing.T, sig, ts, token string, body []byte, pos uint16, repl byte) {
		req := &Request{Body: body, Headers: Headers{{Name: "webhook-signature", Value: sig}, {Name: "webhook-timestamp", Value: ts}, {Name: "webhook-id", Value: gitlabVecID}, {Name: "X-Gitlab-Token", Value: token}, {Name: "Idempotency-Key", Value: "k"}}}
		_, err := p.Verify(req, keys, params)
		checkAnswer(t, err)
		_, err = p.Verify(withoutHeader(req, "webhook-signature"), keys, params)
		checkAnswer(t, err)

		sreq := signed(t, p, SignInput{Body: body, EventID: gitlabUUID, Timestamp: fixedNow}, gitlabSigning)
		// A valid token beside a signature does not rescue a mutated one where signatures are
		// required (elsewhere it authenticates the delivery as it would alone).
		required := params
		required.Options = map[string]string{"require_signature": "true"}
		checkMutation(t, p, keys, required, withHeader(sreq, "X-Gitlab-Token", gitlabToken), "webhook-signature", pos, repl)
		// Elsewhere the mutated delivery gets exactly what it gets without the signature
		// header: accepted under the token's secret and Idempotency-Key, the token redacted.
		if mreq, _, changed := mutateHeader(t, withHeader(sreq, "X-Gitlab-Token", gitlabToken), "webhook-signature", pos, repl); changed {
			got, err := p.Verify(mreq, keys, params)
			want, wantErr := p.Verify(withoutHeader(mreq, "webhook-signature"), keys, params)
			if err != nil || wantErr != nil || got != want || got.KeyID != "k1" || got.CredentialHeader != "X-Gitlab-Token" {
				t.Fatalf("mutated signature beside a valid token: %+v, %v; without the signature header %+v, %v", got, err, want, wantErr)
			}
		}
		treq := signed(t, p, SignInput{Body: body, EventID: gitlabUUID}, gitlabToken)
		checkMutation(t, p, keys, params, treq, "X-Gitlab-Token", pos, repl)
	})
}
