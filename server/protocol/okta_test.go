package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const (
	oktaSecret    = "my-shared-secret"
	oktaSecretNew = "a8f5f167f44f4964e6c998dee827110c"
	// oktaBody follows the event hook example in okta/okta-developer-docs
	// docs/concepts/event-hooks (com.okta.event_hook, data.events[]).
	oktaBody = `{"eventType":"com.okta.event_hook","eventTypeVersion":"1.0","cloudEventsVersion":"0.1","source":"https://${yourOktaDomain}/api/v1/eventHooks/whoql0HfiLGPWc8Jx0g3","eventId":"b5a188b9-5ece-4636-b041-482ffda96311","data":{"events":[{"uuid":"4d6f5e5a-c5a1-11ea-8e5a-5d2c7e3b5f44","published":"2020-07-14T21:36:43.145Z","eventType":"user.session.start","version":"0","displayMessage":"User login to Okta","severity":"INFO"}]},"eventTime":"2020-07-14T21:36:43.808Z","contentType":"application/json"}`
)

func oktaRequest(auth, body string) *Request {
	h := Headers{{Name: "Content-Type", Value: "application/json"}}
	if auth != "" {
		h = append(h, Header{Name: "Authorization", Value: auth})
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

func TestOktaVerify(t *testing.T) {
	t.Parallel()
	p := Okta()
	good := oktaRequest(oktaSecret, oktaBody)
	const id = "4d6f5e5a-c5a1-11ea-8e5a-5d2c7e3b5f44"
	twoEvents := strings.Replace(oktaBody, `"severity":"INFO"}]`, `"severity":"INFO"},{"uuid":"0aa1b2c3-0000-11ea-8e5a-5d2c7e3b5f44"}]`, 1)
	sum := sha256.Sum256([]byte("0aa1b2c3-0000-11ea-8e5a-5d2c7e3b5f44\n" + id))
	twoID := "okta-events-sha256:" + hex.EncodeToString(sum[:])
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		options    map[string]string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: good, keys: []string{oktaSecret}, wantKey: "k0", wantEvent: id},
		{name: "body tampered: not authenticated (static credential), still accepted", req: withBody(good, []byte(oktaBody+" ")), keys: []string{oktaSecret}, wantKey: "k0", wantEvent: id},
		{name: "wrong secret", req: good, keys: []string{oktaSecretNew}, wantReason: ReasonSignatureMismatch},
		{name: "prefix of the secret", req: oktaRequest(oktaSecret[:5], oktaBody), keys: []string{oktaSecret}, wantReason: ReasonSignatureMismatch},
		{name: "secret with a suffix", req: oktaRequest(oktaSecret+"x", oktaBody), keys: []string{oktaSecret}, wantReason: ReasonSignatureMismatch},
		{name: "case differs", req: oktaRequest(strings.ToUpper(oktaSecret), oktaBody), keys: []string{oktaSecret}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key matches", req: good, keys: []string{oktaSecret, oktaSecretNew}, wantKey: "k0", wantEvent: id},
		{name: "rotation: new key matches", req: oktaRequest(oktaSecretNew, oktaBody), keys: []string{oktaSecret, oktaSecretNew}, wantKey: "k1", wantEvent: id},
		{name: "missing header", req: oktaRequest("", oktaBody), keys: []string{oktaSecret}, wantReason: ReasonMissingSignature},
		{name: "malformed (empty) header", req: withHeader(good, "Authorization", ""), keys: []string{oktaSecret}, wantReason: ReasonMalformedSignature},
		{name: "header name case-insensitive", req: &Request{Headers: Headers{{Name: "authorization", Value: oktaSecret}}, Body: []byte(oktaBody)}, keys: []string{oktaSecret}, wantKey: "k0", wantEvent: id},
		{name: "custom header option", req: &Request{Headers: Headers{{Name: "X-Hook-Secret", Value: oktaSecret}}, Body: []byte(oktaBody)}, keys: []string{oktaSecret}, options: map[string]string{"header": "X-Hook-Secret"}, wantKey: "k0", wantEvent: id},
		{name: "custom header option ignores Authorization", req: good, keys: []string{oktaSecret}, options: map[string]string{"header": "X-Hook-Secret"}, wantReason: ReasonMissingSignature},
		{name: "two events: sorted-uuid hash identity", req: oktaRequest(oktaSecret, twoEvents), keys: []string{oktaSecret}, wantKey: "k0", wantEvent: twoID},
		{name: "no events", req: oktaRequest(oktaSecret, `{"data":{"events":[]}}`), keys: []string{oktaSecret}, wantReason: ReasonMissingEventID},
		{name: "event without uuid", req: oktaRequest(oktaSecret, `{"data":{"events":[{"eventType":"user.session.start"}]}}`), keys: []string{oktaSecret}, wantReason: ReasonMissingEventID},
		{name: "top-level eventId alone is not the identity", req: oktaRequest(oktaSecret, `{"eventId":"x","data":{"events":[{}]}}`), keys: []string{oktaSecret}, wantReason: ReasonMissingEventID},
		{name: "no data.events", req: oktaRequest(oktaSecret, `{"data":{}}`), keys: []string{oktaSecret}, wantReason: ReasonMalformedPayload},
		{name: "body not JSON", req: oktaRequest(oktaSecret, `not json`), keys: []string{oktaSecret}, wantReason: ReasonMalformedPayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow, Options: tc.options})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && (res.EventID != tc.wantEvent || res.Handshake != nil) {
				t.Fatalf("result %+v, want event %q", res, tc.wantEvent)
			}
		})
	}
}

// TestOktaVerificationChallenge uses the request and reply published in Okta's support
// article "Unable to verify event hook. Hook execution failed"
// (https://support.okta.com/help/s/article/Unable-to-verify-event-hook-Hook-hook-name-execution-failed).
func TestOktaVerificationChallenge(t *testing.T) {
	t.Parallel()
	p := Okta()
	keys := keysFor(t, p, oktaSecretNew, "my-shared-secret")
	req := &Request{Method: "GET", URL: "https://example.com/event-hook/", Headers: Headers{
		{Name: "User-Agent", Value: "Okta-Integrations"},
		{Name: "Accept", Value: "application/json"},
		{Name: "X-Okta-Request-Id", Value: "XOZfPkReFFZ10KWyGkzAMwAAADA"},
		{Name: "X-Okta-Verification-Challenge", Value: "Me_rShK8JHsTnbyYrWXCEoMGbM_zsZ6k0hLPZ_Pg"},
		{Name: "x-any-key", Value: "my-header-value"},
		{Name: "Authorization", Value: "my-shared-secret"},
	}}
	t.Run("correct reply", func(t *testing.T) {
		t.Parallel()
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		h := res.Handshake
		if h == nil || res.KeyID != "k1" || res.EventID != "" || h.Status != 200 || string(h.Body) != `{"verification":"Me_rShK8JHsTnbyYrWXCEoMGbM_zsZ6k0hLPZ_Pg"}` || header(&Request{Headers: h.Headers}, "Content-Type") != "application/json" {
			t.Fatalf("result %+v body %s", res, res.Handshake.Body)
		}
	})
	for _, tc := range []struct {
		name   string
		req    *Request
		reason Reason
	}{
		{"forged challenge (wrong secret) rejected", withHeader(req, "Authorization", "guess"), ReasonSignatureMismatch},
		{"challenge without credential rejected", withoutHeader(req, "Authorization"), ReasonMissingSignature},
		{"empty challenge", withHeader(req, "X-Okta-Verification-Challenge", ""), ReasonMalformedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keys, Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.reason, "", tc.req)
		})
	}
	t.Run("challenge with JSON-special characters is escaped", func(t *testing.T) {
		t.Parallel()
		res, err := p.Verify(withHeader(req, "X-Okta-Verification-Challenge", `a"b\c<d>`), keys, Params{Now: fixedNow})
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Verification string }
		if err := json.Unmarshal(res.Handshake.Body, &got); err != nil || got.Verification != `a"b\c<d>` {
			t.Fatalf("reply %s (%v)", res.Handshake.Body, err)
		}
	})
}

func TestOktaSecretsOptionsSign(t *testing.T) {
	t.Parallel()
	p := Okta()
	for _, s := range []string{"", " padded", "line\nbreak", "nul\x00"} {
		if _, err := p.ParseSecret(s); !errors.Is(err, ErrInvalidSecret) || (len(s) > 3 && strings.Contains(err.Error(), s)) {
			t.Errorf("ParseSecret(%q) = %v", s, err)
		}
	}
	for _, opts := range []map[string]string{{"other": "x"}, {"header": ""}, {"header": "Bad Header"}, {"header": "a:b"}} {
		if err := p.ValidateOptions(opts); err == nil {
			t.Errorf("ValidateOptions(%v) accepted", opts)
		}
	}
	if err := p.ValidateOptions(map[string]string{"header": "X-Okta-Secret"}); err != nil {
		t.Fatal(err)
	}
	h, err := p.Sign(SignInput{Body: []byte(oktaBody), Options: map[string]string{"header": "X-Okta-Secret"}}, []string{oktaSecret, oktaSecretNew})
	if err != nil || header(&Request{Headers: h}, "X-Okta-Secret") != oktaSecret || header(&Request{Headers: h}, "Authorization") != "" {
		t.Fatalf("Sign = %+v, %v", h, err)
	}
	if _, err := p.Sign(SignInput{Body: []byte(oktaBody)}, nil); err == nil {
		t.Fatal("Sign without a secret succeeded")
	}
	if _, err := p.Sign(SignInput{Body: []byte(oktaBody)}, []string{" x"}); err == nil {
		t.Fatal("Sign with an invalid secret succeeded")
	}
}

func FuzzOktaCredentialHeader(f *testing.F) {
	p := Okta()
	keys := keysFor(f, p, oktaSecret)
	f.Add(oktaSecret, "", []byte(oktaBody), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, auth, challenge string, body []byte, pos uint16, repl byte) {
		req := &Request{Headers: Headers{{Name: "Authorization", Value: auth}}, Body: body}
		if challenge != "" {
			req.Headers = append(req.Headers, Header{Name: "X-Okta-Verification-Challenge", Value: challenge})
		}
		_, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkAnswer(t, err)
		_, err = oktaEventID(body)
		checkAnswer(t, err)

		good := signed(t, p, SignInput{Body: body}, oktaSecret)
		checkMutation(t, p, keys, Params{Now: fixedNow}, good, "Authorization", pos, repl)
	})
}
