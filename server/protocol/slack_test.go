package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	slackSecret    = "e6b19c573432dcc6b075501d51b51bb8"
	slackSecretNew = "0123456789abcdef0123456789abcdef"
	slackBody      = `{"token":"aF5ynEYQH0dFN9imlgcADxDB","team_id":"T1","type":"event_callback","event":{"type":"app_mention"},"event_id":"Ev0PV52K21","event_time":1700000000}`
	slackForm      = "token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&command=%2Fweather&text=94070&trigger_id=13345224609.738474920.8088930838d88f008e0"
)

// slackSig is an independent computation of Slack's v0 signature.
func slackSig(secret, ts, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func slackRequest(ts, sig, body string) *Request {
	h := Headers{}
	if ts != "" {
		h = append(h, Header{Name: "X-Slack-Request-Timestamp", Value: ts})
	}
	if sig != "" {
		h = append(h, Header{Name: "X-Slack-Signature", Value: sig})
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

// slackSigned is a request signed at unix time ts with secret.
func slackSigned(ts int64, body, secret string) *Request {
	s := strconv.FormatInt(ts, 10)
	return slackRequest(s, slackSig(secret, s, body), body)
}

func TestSlackVerify(t *testing.T) {
	t.Parallel()
	p := Slack()
	now := fixedNow.Unix()
	nowS := strconv.FormatInt(now, 10)
	good := slackSigned(now, slackBody, slackSecret)
	formID := bodySHA256ID([]byte(slackForm))
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: good, keys: []string{slackSecret}, wantKey: "k0", wantEvent: "Ev0PV52K21"},
		{name: "body tampered by one trailing space", req: withBody(good, []byte(slackBody+" ")), keys: []string{slackSecret}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: withHeader(good, "X-Slack-Request-Timestamp", strconv.FormatInt(now+1, 10)), keys: []string{slackSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: good, keys: []string{slackSecretNew}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key matches", req: good, keys: []string{slackSecret, slackSecretNew}, wantKey: "k0", wantEvent: "Ev0PV52K21"},
		{name: "rotation: new key matches", req: slackSigned(now, slackBody, slackSecretNew), keys: []string{slackSecret, slackSecretNew}, wantKey: "k1", wantEvent: "Ev0PV52K21"},
		{name: "header names case-insensitive", req: &Request{Headers: Headers{{Name: "x-slack-signature", Value: header(good, "X-Slack-Signature")}, {Name: "x-slack-request-timestamp", Value: nowS}}, Body: []byte(slackBody)}, keys: []string{slackSecret}, wantKey: "k0", wantEvent: "Ev0PV52K21"},
		{name: "missing signature header", req: withoutHeader(good, "X-Slack-Signature"), keys: []string{slackSecret}, wantReason: ReasonMissingSignature},
		{name: "empty signature header", req: withHeader(good, "X-Slack-Signature", ""), keys: []string{slackSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: no =", req: withHeader(good, "X-Slack-Signature", "v0"+strings.Repeat("a", 64)), keys: []string{slackSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: bad hex", req: withHeader(good, "X-Slack-Signature", "v0=zz"+strings.Repeat("a", 62)), keys: []string{slackSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: short hex", req: withHeader(good, "X-Slack-Signature", "v0=abcd"), keys: []string{slackSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: uppercase hex", req: withHeader(good, "X-Slack-Signature", "v0="+strings.ToUpper(header(good, "X-Slack-Signature")[3:])), keys: []string{slackSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: empty version", req: withHeader(good, "X-Slack-Signature", "="+strings.Repeat("a", 64)), keys: []string{slackSecret}, wantReason: ReasonMalformedSignature},
		{name: "unknown version ignored", req: withHeader(good, "X-Slack-Signature", "v1="+header(good, "X-Slack-Signature")[3:]), keys: []string{slackSecret}, wantReason: ReasonMissingSignature},
		{name: "missing timestamp", req: withoutHeader(good, "X-Slack-Request-Timestamp"), keys: []string{slackSecret}, wantReason: ReasonMissingTimestamp},
		{name: "empty timestamp", req: withHeader(good, "X-Slack-Request-Timestamp", ""), keys: []string{slackSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not decimal", req: withHeader(good, "X-Slack-Request-Timestamp", "17e8"), keys: []string{slackSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp negative", req: withHeader(good, "X-Slack-Request-Timestamp", "-1"), keys: []string{slackSecret}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: slackSigned(now-301, slackBody, slackSecret), keys: []string{slackSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: slackSigned(now+301, slackBody, slackSecret), keys: []string{slackSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "exactly tolerance old is accepted", req: slackSigned(now-300, slackBody, slackSecret), keys: []string{slackSecret}, wantKey: "k0", wantEvent: "Ev0PV52K21"},
		{name: "exactly tolerance ahead is accepted", req: slackSigned(now+300, slackBody, slackSecret), keys: []string{slackSecret}, wantKey: "k0", wantEvent: "Ev0PV52K21"},
		{name: "zero tolerance means the default", req: slackSigned(now-299, slackBody, slackSecret), keys: []string{slackSecret}, params: Params{Now: fixedNow}, wantKey: "k0", wantEvent: "Ev0PV52K21"},
		{name: "endpoint tolerance narrower than default", req: slackSigned(now-20, slackBody, slackSecret), keys: []string{slackSecret}, params: Params{Now: fixedNow, Tolerance: 10 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "bad signature beats stale timestamp", req: slackSigned(now-3600, slackBody, slackSecretNew), keys: []string{slackSecret}, wantReason: ReasonSignatureMismatch},
		{name: "retry headers do not matter", req: withHeader(withHeader(good, "X-Slack-Retry-Num", "1"), "X-Slack-Retry-Reason", "http_timeout"), keys: []string{slackSecret}, wantKey: "k0", wantEvent: "Ev0PV52K21"},
		{name: "form body: body-hash identity", req: slackSigned(now, slackForm, slackSecret), keys: []string{slackSecret}, wantKey: "k0", wantEvent: formID},
		{name: "interactivity payload form body", req: slackSigned(now, "payload=%7B%22type%22%3A%22block_actions%22%7D", slackSecret), keys: []string{slackSecret}, wantKey: "k0", wantEvent: bodySHA256ID([]byte("payload=%7B%22type%22%3A%22block_actions%22%7D"))},
		{name: "app_rate_limited: body-hash identity", req: slackSigned(now, `{"type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820,"api_app_id":"A1"}`, slackSecret), keys: []string{slackSecret}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`{"type":"app_rate_limited","team_id":"T1","minute_rate_limited":1518467820,"api_app_id":"A1"}`))},
		{name: "event_callback without event_id", req: slackSigned(now, `{"type":"event_callback","event":{}}`, slackSecret), keys: []string{slackSecret}, wantReason: ReasonMissingEventID},
		{name: "empty event_id", req: slackSigned(now, `{"type":"event_callback","event_id":""}`, slackSecret), keys: []string{slackSecret}, wantReason: ReasonMissingEventID},
		{name: "event_id not a string", req: slackSigned(now, `{"type":"event_callback","event_id":7}`, slackSecret), keys: []string{slackSecret}, wantReason: ReasonMissingEventID},
		{name: "JSON not an object", req: slackSigned(now, `{"event_id":"Ev1"`, slackSecret), keys: []string{slackSecret}, wantReason: ReasonMalformedPayload},
		{name: "empty body", req: slackSigned(now, ``, slackSecret), keys: []string{slackSecret}, wantReason: ReasonMalformedPayload},
		{name: "body neither JSON nor form", req: slackSigned(now, "a=%zz", slackSecret), keys: []string{slackSecret}, wantReason: ReasonMalformedPayload},
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
			if tc.wantReason == 0 {
				if res.EventID != tc.wantEvent {
					t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
				}
				if res.Handshake != nil {
					t.Fatalf("unexpected handshake %+v", res.Handshake)
				}
			}
		})
	}
}

func TestSlackURLVerification(t *testing.T) {
	t.Parallel()
	p := Slack()
	// Body from Slack's url_verification event page (https://api.slack.com/events/url_verification).
	const body = `{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`
	params := Params{Now: fixedNow, Tolerance: 300 * time.Second}
	keys := keysFor(t, p, slackSecret)
	t.Run("correct reply", func(t *testing.T) {
		t.Parallel()
		req := slackSigned(fixedNow.Unix(), body, slackSecret)
		res, err := p.Verify(req, keys, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.Handshake == nil || res.KeyID != "k0" || res.EventID != "" {
			t.Fatalf("result %+v, want an authenticated handshake", res)
		}
		h := res.Handshake
		if h.Status != 200 || string(h.Body) != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" || !strings.HasPrefix(header(&Request{Headers: h.Headers}, "Content-Type"), "text/plain") ||
			header(&Request{Headers: h.Headers}, "X-Content-Type-Options") != "nosniff" {
			t.Fatalf("reply %d %v %q", h.Status, h.Headers, h.Body)
		}
	})
	for _, tc := range []struct {
		name   string
		req    *Request
		reason Reason
	}{
		{"forged handshake rejected", slackSigned(fixedNow.Unix(), body, "not-the-secret"), ReasonSignatureMismatch},
		{"unsigned handshake rejected", &Request{Body: []byte(body)}, ReasonMissingSignature},
		{"stale handshake rejected", slackSigned(fixedNow.Unix()-1000, body, slackSecret), ReasonTimestampOutOfTolerance},
		{"handshake without challenge", slackSigned(fixedNow.Unix(), `{"type":"url_verification","challenge":""}`, slackSecret), ReasonMalformedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keys, params)
			checkOutcome(t, res, err, tc.reason, "", tc.req)
		})
	}
}

// TestSlackPublishedVectors checks two published vectors, recomputed independently above
// and verified here:
//   - Slack's docs (https://docs.slack.dev/authentication/verifying-requests-from-slack): a
//     slash-command form body, secret 8f742231b10e8888abcd99yyyzzz85a5, ts 1531420618;
//   - slack-go/slack security_test.go: an Events API JSON body, secret
//     e6b19c573432dcc6b075501d51b51bb8, ts 1531431954.
func TestSlackPublishedVectors(t *testing.T) {
	t.Parallel()
	p := Slack()
	for _, tc := range []struct {
		name, secret, ts, body, sig, event string
	}{
		{
			name:   "docs slash command",
			secret: "8f742231b10e8888abcd99yyyzzz85a5",
			ts:     "1531420618",
			body:   "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c",
			sig:    "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
		},
		{
			name:   "slack-go event_callback",
			secret: "e6b19c573432dcc6b075501d51b51bb8",
			ts:     "1531431954",
			body:   `{"token":"aF5ynEYQH0dFN9imlgcADxDB","team_id":"XXXXXXXXX","api_app_id":"YYYYYYYYY","event":{"type":"app_mention","user":"AAAAAAAAA","text":"<@EEEEEEEEE> hello world","client_msg_id":"477cc591-ch73-a14z-4db8-g0cd76321bec","ts":"1531431954.000073","channel":"TTTTTTTTT","event_ts":"1531431954.000073"},"type":"event_callback","event_id":"TvBP7LRED7","event_time":1531431954,"authed_users":["EEEEEEEEE"]}`,
			sig:    "v0=adada4ed31709aef585c2580ca3267678c6a8eaeb7e0c1aca3ee57b656886b2c",
			event:  "TvBP7LRED7",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := slackSig(tc.secret, tc.ts, tc.body); got != tc.sig {
				t.Fatalf("independent HMAC = %s, want %s", got, tc.sig)
			}
			ts, _ := strconv.ParseInt(tc.ts, 10, 64)
			req := slackRequest(tc.ts, tc.sig, tc.body)
			res, err := p.Verify(req, keysFor(t, p, tc.secret), Params{Now: time.Unix(ts+60, 0)})
			checkOutcome(t, res, err, 0, "k0", req)
			want := tc.event
			if want == "" {
				want = bodySHA256ID([]byte(tc.body))
			}
			if res.EventID != want {
				t.Fatalf("EventID = %q, want %q", res.EventID, want)
			}
			h, err := p.Sign(SignInput{Body: []byte(tc.body), Timestamp: time.Unix(ts, 0)}, []string{tc.secret})
			if err != nil {
				t.Fatal(err)
			}
			if header(&Request{Headers: h}, "X-Slack-Signature") != tc.sig || header(&Request{Headers: h}, "X-Slack-Request-Timestamp") != tc.ts {
				t.Fatalf("Sign = %v", h)
			}
		})
	}
}

func TestSlackParseSecret(t *testing.T) {
	t.Parallel()
	p := Slack()
	for _, tc := range []struct {
		name    string
		secret  string
		wantErr bool
	}{
		{"hex secret", slackSecret, false},
		{"docs example (not hex) is still a key", "8f742231b10e8888abcd99yyyzzz85a5", false},
		{"empty", "", true},
		{"surrounding whitespace", " " + slackSecret + "\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key, err := p.ParseSecret(tc.secret)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidSecret) {
					t.Fatalf("err = %v, want ErrInvalidSecret", err)
				}
				if tc.secret != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.secret)) {
					t.Fatalf("error %q echoes the secret", err)
				}
				return
			}
			if err != nil || string(key) != tc.secret {
				t.Fatalf("ParseSecret = %q, %v", key, err)
			}
		})
	}
}

func TestSlackSign(t *testing.T) {
	t.Parallel()
	p := Slack()
	at := time.Unix(1_700_000_000, 0)
	t.Run("first secret signs", func(t *testing.T) {
		t.Parallel()
		h, err := p.Sign(SignInput{Body: []byte(slackBody), Timestamp: at}, []string{slackSecret, slackSecretNew})
		if err != nil {
			t.Fatal(err)
		}
		r := &Request{Headers: h}
		if len(h) != 2 || header(r, "X-Slack-Request-Timestamp") != "1700000000" || header(r, "X-Slack-Signature") != slackSig(slackSecret, "1700000000", slackBody) {
			t.Fatalf("Sign = %+v", h)
		}
	})
	for _, tc := range []struct {
		name    string
		in      SignInput
		secrets []string
	}{
		{"no secrets", SignInput{Body: []byte(slackBody), Timestamp: at}, nil},
		{"no timestamp", SignInput{Body: []byte(slackBody)}, []string{slackSecret}},
		{"timestamp before 1970", SignInput{Body: []byte(slackBody), Timestamp: time.Unix(-5, 0)}, []string{slackSecret}},
		{"invalid secret", SignInput{Body: []byte(slackBody), Timestamp: at}, []string{""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if _, err := p.Sign(tc.in, tc.secrets); err == nil {
				t.Fatal("Sign succeeded")
			}
		})
	}
}

func FuzzSlackSignatureHeader(f *testing.F) {
	p := Slack()
	keys := keysFor(f, p, slackSecret)
	params := Params{Now: fixedNow, Tolerance: 300 * time.Second}
	ts := strconv.FormatInt(fixedNow.Unix(), 10)
	f.Add(slackSig(slackSecret, ts, slackBody), ts, []byte(slackBody), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig, timestamp string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(slackRequest(timestamp, sig, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = parseSlackSignature(sig)
		checkAnswer(t, err)
		_, err = slackIdentity(body)
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, slackSecret)
		checkMutation(t, p, keys, params, req, "X-Slack-Signature", pos, repl)
		checkHeaderMutationRejected(t, p, keys, params, req, "X-Slack-Request-Timestamp", pos, repl)
	})
}

// TestSlackSSLCheck: Slack checks a slash command URL's certificate with an unsigned POST of
// ssl_check=1 (slackapi/bolt-js#1397); Bolt answers it 200 with an empty body. It is
// answered as a handshake, stored nowhere; any other unsigned body is still rejected.
func TestSlackSSLCheck(t *testing.T) {
	t.Parallel()
	p := Slack()
	keys := keysFor(t, p, slackSecret)
	params := Params{Now: fixedNow}
	req := &Request{Method: "POST", Headers: Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}, Body: []byte("ssl_check=1&token=xxx")}
	res, err := p.Verify(req, keys, params)
	if err != nil {
		t.Fatalf("ssl_check: %v", err)
	}
	if res.Handshake == nil || res.Handshake.Status != 200 || len(res.Handshake.Body) != 0 || res.EventID != "" {
		t.Fatalf("ssl_check answered %+v, want a 200 handshake with an empty body", res)
	}
	for _, body := range []string{"ssl_check=0&token=xxx", "ssl_check=1&ssl_check=1", "command=%2Fdeploy&text=now", "ssl_check=true", ""} {
		req := &Request{Method: "POST", Body: []byte(body)}
		res, err := p.Verify(req, keys, params)
		checkOutcome(t, res, err, ReasonMissingSignature, "", req)
	}
}

// TestSlackAckHasNoBody: Slack reads the body of the acknowledgement of an interactivity
// payload or slash command. A view_submission must be answered 200 with an empty body (or a
// response_action), and any other body, such as hookverify's generic {"status":"accepted"},
// leaves the modal open with "We had some trouble connecting. Try again?" (Slack's "Handling
// user interaction" acknowledgment response; e.g. inkeep/agents#2228, superloglabs/superlog#32,
// vercel/eve#277: {"ok":true} or "ok" bodies broke exactly that). A slash command answered
// with a JSON body is taken as a message to post. Bolt acknowledges everything with an empty
// 200, which the Events API accepts too. So an accepted or duplicate Slack delivery of any
// kind is answered 200 with no body.
func TestSlackAckHasNoBody(t *testing.T) {
	t.Parallel()
	p := Slack()
	keys := keysFor(t, p, slackSecret)
	params := Params{Now: fixedNow}
	viewSubmission := url.Values{"payload": {`{"type":"view_submission","team":{"id":"T1"},"user":{"id":"U1"},"trigger_id":"1.2.3","view":{"id":"V1","callback_id":"cb","state":{"values":{}}}}`}}.Encode()
	command := url.Values{"command": {"/todo"}, "text": {"bake a cake"}, "trigger_id": {"13345224609.738474920.8088930838d88f008e0"}, "response_url": {"https://hooks.slack.com/commands/1234/5678"}}.Encode()
	for _, tc := range []struct{ name, body string }{
		{"view_submission", viewSubmission},
		{"slash command", command},
		{"events API", slackBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(slackSigned(fixedNow.Unix(), tc.body, slackSecret), keys, params)
			if err != nil {
				t.Fatal(err)
			}
			if res.Handshake != nil || res.EventID == "" {
				t.Fatalf("not a delivery: %+v", res)
			}
			reply := res.SuccessReply
			if reply == nil {
				reply = p.SuccessReply
			}
			if reply == nil {
				t.Fatal(`no SuccessReply: the delivery is answered with hookverify's generic {"status":"accepted"}, which fails a Slack modal submission`)
			}
			if reply.Status != 200 || len(reply.Body) != 0 {
				t.Fatalf("reply %d %q, want 200 with an empty body", reply.Status, reply.Body)
			}
		})
	}
}
