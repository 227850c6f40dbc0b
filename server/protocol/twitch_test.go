package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const (
	twitchSecret    = "s3cre7-0f-the-subscription"
	twitchSecretNew = "another-subscription-secret"
	twitchID        = "befa7b53-d79d-478f-86b9-120f112b044e"
	twitchBody      = `{"subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","type":"channel.follow","version":"2","status":"enabled","cost":0,"condition":{"broadcaster_user_id":"1337","moderator_user_id":"1337"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},"created_at":"2019-11-16T10:11:12.634234626Z"},"event":{"user_id":"1234","user_login":"cool_user","user_name":"Cool_User","broadcaster_user_id":"1337","broadcaster_user_login":"cooler_user","broadcaster_user_name":"Cooler_User","followed_at":"2020-07-15T18:16:11.17106713Z"}}`
)

// twitchCLISig is twitch-cli's own signing code (twitchdev/twitch-cli
// internal/events/trigger/forward_event.go getSignatureHeader): it re-formats the timestamp
// with time.Parse and AppendFormat(RFC3339Nano), which equals the header for canonical values.
func twitchCLISig(id, secret, timestamp, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	ts, _ := time.Parse(time.RFC3339Nano, timestamp)
	mac.Write(ts.AppendFormat([]byte(id), time.RFC3339Nano))
	mac.Write([]byte(body))
	return fmt.Sprintf("sha256=%x", mac.Sum(nil))
}

// twitchSig is the documented algorithm over the header string verbatim.
func twitchSig(id, secret, timestamp, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(id + timestamp + body))
	return fmt.Sprintf("sha256=%x", mac.Sum(nil))
}

func twitchRequest(id, ts, typ, sig, body string) *Request {
	h := Headers{}
	for _, f := range []Header{{twitchIDHeader, id}, {twitchTimestampHeader, ts}, {twitchTypeHeader, typ}, {twitchSignatureHeader, sig}} {
		if f.Value != "" {
			h = append(h, f)
		}
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

func twitchSignedAt(at time.Time, typ, body, secret string) *Request {
	ts := at.UTC().Format(time.RFC3339Nano)
	return twitchRequest(twitchID, ts, typ, twitchSig(twitchID, secret, ts, body), body)
}

func TestTwitchVerify(t *testing.T) {
	t.Parallel()
	p := Twitch()
	at := fixedNow.Add(-1500 * time.Millisecond)
	good := twitchSignedAt(at, "notification", twitchBody, twitchSecret)
	tol := twitchDefaultTolerance
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: good, keys: []string{twitchSecret}, wantKey: "k0", wantEvent: twitchID},
		{name: "body tampered by one trailing space", req: withBody(good, []byte(twitchBody+" ")), keys: []string{twitchSecret}, wantReason: ReasonSignatureMismatch},
		{name: "message id tampered", req: withHeader(good, twitchIDHeader, "befa7b53-d79d-478f-86b9-120f112b044f"), keys: []string{twitchSecret}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp re-formatted (trailing zero) is a mismatch: signed verbatim", req: twitchRequest(twitchID, "2023-11-14T22:13:20.500Z", "notification", twitchSig(twitchID, twitchSecret, "2023-11-14T22:13:20.5Z", twitchBody), twitchBody), keys: []string{twitchSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: good, keys: []string{twitchSecretNew}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key matches", req: good, keys: []string{twitchSecret, twitchSecretNew}, wantKey: "k0", wantEvent: twitchID},
		{name: "rotation: new key matches", req: twitchSignedAt(at, "notification", twitchBody, twitchSecretNew), keys: []string{twitchSecret, twitchSecretNew}, wantKey: "k1", wantEvent: twitchID},
		{name: "header names case-insensitive", req: &Request{Headers: Headers{{strings.ToLower(twitchIDHeader), twitchID}, {strings.ToLower(twitchTimestampHeader), header(good, twitchTimestampHeader)}, {strings.ToLower(twitchSignatureHeader), header(good, twitchSignatureHeader)}}, Body: []byte(twitchBody)}, keys: []string{twitchSecret}, wantKey: "k0", wantEvent: twitchID},
		{name: "missing signature header", req: withoutHeader(good, twitchSignatureHeader), keys: []string{twitchSecret}, wantReason: ReasonMissingSignature},
		{name: "empty signature header", req: withHeader(good, twitchSignatureHeader, ""), keys: []string{twitchSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: no =", req: withHeader(good, twitchSignatureHeader, "sha256"), keys: []string{twitchSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: short hex", req: withHeader(good, twitchSignatureHeader, "sha256=f56bf6ce06a1adf46fa27831d7d15d"), keys: []string{twitchSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: uppercase hex", req: withHeader(good, twitchSignatureHeader, "sha256="+strings.ToUpper(header(good, twitchSignatureHeader)[7:])), keys: []string{twitchSecret}, wantReason: ReasonMalformedSignature},
		{name: "unknown scheme ignored", req: withHeader(good, twitchSignatureHeader, "sha512="+header(good, twitchSignatureHeader)[7:]), keys: []string{twitchSecret}, wantReason: ReasonMissingSignature},
		{name: "missing message id", req: withoutHeader(good, twitchIDHeader), keys: []string{twitchSecret}, wantReason: ReasonMissingEventID},
		{name: "missing timestamp", req: withoutHeader(good, twitchTimestampHeader), keys: []string{twitchSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not RFC3339", req: withHeader(good, twitchTimestampHeader, "1700000000"), keys: []string{twitchSecret}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: twitchSignedAt(fixedNow.Add(-tol-time.Millisecond), "notification", twitchBody, twitchSecret), keys: []string{twitchSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: twitchSignedAt(fixedNow.Add(tol+time.Millisecond), "notification", twitchBody, twitchSecret), keys: []string{twitchSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "exactly tolerance old is accepted", req: twitchSignedAt(fixedNow.Add(-tol), "notification", twitchBody, twitchSecret), keys: []string{twitchSecret}, wantKey: "k0", wantEvent: twitchID},
		{name: "exactly tolerance ahead is accepted", req: twitchSignedAt(fixedNow.Add(tol), "notification", twitchBody, twitchSecret), keys: []string{twitchSecret}, wantKey: "k0", wantEvent: twitchID},
		{name: "non-UTC offset accepted", req: twitchSignedAt(fixedNow, "notification", twitchBody, twitchSecret), keys: []string{twitchSecret}, params: Params{Now: fixedNow.In(time.FixedZone("x", 3600))}, wantKey: "k0", wantEvent: twitchID},
		{name: "endpoint tolerance narrower than default", req: twitchSignedAt(fixedNow.Add(-20*time.Second), "notification", twitchBody, twitchSecret), keys: []string{twitchSecret}, params: Params{Now: fixedNow, Tolerance: 10 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "bad signature beats stale timestamp", req: twitchSignedAt(fixedNow.Add(-time.Hour), "notification", twitchBody, twitchSecretNew), keys: []string{twitchSecret}, wantReason: ReasonSignatureMismatch},
		{name: "revocation is a delivery identified by message id", req: twitchSignedAt(at, "revocation", `{"subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"authorization_revoked","type":"channel.follow","version":"2"}}`, twitchSecret), keys: []string{twitchSecret}, wantKey: "k0", wantEvent: twitchID},
		{name: "no type header: a delivery", req: withoutHeader(good, twitchTypeHeader), keys: []string{twitchSecret}, wantKey: "k0", wantEvent: twitchID},
		{name: "notification relabelled as verification has no challenge", req: withHeader(good, twitchTypeHeader, "webhook_callback_verification"), keys: []string{twitchSecret}, wantReason: ReasonMalformedPayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow, Tolerance: tol}
			}
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && (res.EventID != tc.wantEvent || res.Handshake != nil) {
				t.Fatalf("result %+v, want event %q", res, tc.wantEvent)
			}
		})
	}
}

func TestTwitchToleranceDetail(t *testing.T) {
	t.Parallel()
	p := Twitch()
	req := twitchSignedAt(fixedNow.Add(-700500*time.Millisecond), "notification", twitchBody, twitchSecret)
	_, err := p.Verify(req, keysFor(t, p, twitchSecret), Params{Now: fixedNow})
	if !errors.Is(err, &Rejection{Reason: ReasonTimestampOutOfTolerance, Detail: "timestamp is 701s old, more than the 600s tolerance"}) {
		t.Fatalf("got %v", err)
	}
}

func TestTwitchCallbackVerification(t *testing.T) {
	t.Parallel()
	p := Twitch()
	// Body shape from https://dev.twitch.tv/docs/eventsub/handling-webhook-events/ (challenge request).
	const body = `{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2a387-161a-49f9-a165-0f21d7a4e1c4","status":"webhook_callback_verification_pending","type":"channel.follow","version":"2","cost":1,"condition":{"broadcaster_user_id":"12826"},"transport":{"method":"webhook","callback":"https://example.com/webhooks/callback"},"created_at":"2019-11-16T10:11:12.634234626Z"}}`
	keys := keysFor(t, p, twitchSecret)
	params := Params{Now: fixedNow}
	t.Run("correct reply", func(t *testing.T) {
		t.Parallel()
		res, err := p.Verify(twitchSignedAt(fixedNow, twitchVerification, body, twitchSecret), keys, params)
		if err != nil {
			t.Fatal(err)
		}
		h := res.Handshake
		if h == nil || res.KeyID != "k0" || res.EventID != "" || h.Status != 200 || string(h.Body) != "pogchamp-kappa-360noscope-vohiyo" || !strings.HasPrefix(header(&Request{Headers: h.Headers}, "Content-Type"), "text/plain") ||
			header(&Request{Headers: h.Headers}, "X-Content-Type-Options") != "nosniff" {
			t.Fatalf("result %+v", res)
		}
	})
	for _, tc := range []struct {
		name   string
		req    *Request
		reason Reason
	}{
		{"forged handshake rejected", twitchSignedAt(fixedNow, twitchVerification, body, twitchSecretNew), ReasonSignatureMismatch},
		{"unsigned handshake rejected", withoutHeader(twitchSignedAt(fixedNow, twitchVerification, body, twitchSecret), twitchSignatureHeader), ReasonMissingSignature},
		{"stale handshake rejected", twitchSignedAt(fixedNow.Add(-time.Hour), twitchVerification, body, twitchSecret), ReasonTimestampOutOfTolerance},
		{"empty challenge", twitchSignedAt(fixedNow, twitchVerification, `{"challenge":""}`, twitchSecret), ReasonMalformedPayload},
		{"body not JSON", twitchSignedAt(fixedNow, twitchVerification, `challenge`, twitchSecret), ReasonMalformedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keys, params)
			checkOutcome(t, res, err, tc.reason, "", tc.req)
		})
	}
}

// TestTwitchSenderAgreement: Twitch publishes no vector with a full signature (the docs'
// sample header, "sha256=f56bf6ce06a1adf46fa27831d7d15d", is truncated), so this uses the
// docs' sample message id and timestamp and checks that twitch-cli's own signing code (the
// official test sender) and the documented algorithm agree with Verify and Sign.
func TestTwitchSenderAgreement(t *testing.T) {
	t.Parallel()
	p := Twitch()
	const id, ts = "e76c6bd4-55c9-4987-8304-da1588d8988b", "2019-11-16T10:11:12.634234626Z"
	at, _ := time.Parse(time.RFC3339Nano, ts)
	sig := twitchCLISig(id, twitchSecret, ts, twitchBody)
	if sig != twitchSig(id, twitchSecret, ts, twitchBody) {
		t.Fatal("twitch-cli and the documented algorithm disagree")
	}
	req := twitchRequest(id, ts, "notification", sig, twitchBody)
	res, err := p.Verify(req, keysFor(t, p, twitchSecret), Params{Now: at.Add(time.Minute)})
	checkOutcome(t, res, err, 0, "k0", req)
	h, err := p.Sign(SignInput{Body: []byte(twitchBody), EventID: id, Timestamp: at}, []string{twitchSecret})
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Headers: h}
	if header(r, twitchSignatureHeader) != sig || header(r, twitchTimestampHeader) != ts || header(r, twitchIDHeader) != id ||
		header(r, "Twitch-Eventsub-Subscription-Type") != "channel.follow" || header(r, "Twitch-Eventsub-Subscription-Version") != "2" || header(r, twitchTypeHeader) != "notification" {
		t.Fatalf("Sign = %+v", h)
	}
}

func TestTwitchParseSecretAndSign(t *testing.T) {
	t.Parallel()
	p := Twitch()
	for _, tc := range []struct {
		secret  string
		wantErr bool
	}{
		{"0123456789", false},
		{strings.Repeat("x", 100), false},
		{"012345678", true},
		{strings.Repeat("x", 101), true},
		{"", true},
	} {
		_, err := p.ParseSecret(tc.secret)
		if (err != nil) != tc.wantErr || (err != nil && !errors.Is(err, ErrInvalidSecret)) {
			t.Errorf("ParseSecret(len %d) = %v", len(tc.secret), err)
		}
		if err != nil && len(tc.secret) > 3 && strings.Contains(err.Error(), tc.secret) {
			t.Errorf("error echoes the secret")
		}
	}
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte(twitchBody), EventID: twitchID, Timestamp: fixedNow}, nil},
		{"no event id", SignInput{Body: []byte(twitchBody), Timestamp: fixedNow}, []string{twitchSecret}},
		{"no timestamp", SignInput{Body: []byte(twitchBody), EventID: twitchID}, []string{twitchSecret}},
		{"invalid secret", SignInput{Body: []byte(twitchBody), EventID: twitchID, Timestamp: fixedNow}, []string{"short"}},
	} {
		if _, err := p.Sign(tc.in, tc.secrets); err == nil {
			t.Errorf("%s: Sign succeeded", tc.name)
		}
	}
}

func FuzzTwitchSignatureHeader(f *testing.F) {
	p := Twitch()
	keys := keysFor(f, p, twitchSecret)
	params := Params{Now: fixedNow}
	ts := fixedNow.UTC().Format(time.RFC3339Nano)
	f.Add(twitchSig(twitchID, twitchSecret, ts, twitchBody), ts, "notification", []byte(twitchBody), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig, timestamp, typ string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(twitchRequest(twitchID, timestamp, typ, sig, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = parseTwitchSignature(sig)
		checkAnswer(t, err)
		parseTwitchTimestamp(timestamp)

		req := signed(t, p, SignInput{Body: body, EventID: twitchID, Timestamp: fixedNow}, twitchSecret)
		checkMutation(t, p, keys, params, req, twitchSignatureHeader, pos, repl)
		checkHeaderMutationRejected(t, p, keys, params, req, twitchTimestampHeader, pos, repl)
		checkHeaderMutationRejected(t, p, keys, params, req, twitchIDHeader, pos, repl)
	})
}
