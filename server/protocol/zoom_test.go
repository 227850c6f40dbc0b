package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	zoomSecret    = "X4Bh0Ju7SbeVwHvCwsVbZA"
	zoomSecretNew = "qgg8vlPmX7TkqGZD3TdSaZ"
	zoomBody      = `{"event":"meeting.started","event_ts":1699999999123,"payload":{"account_id":"AAAAAABBBB","object":{"id":"1234567890","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"My Meeting","type":2}}}`
)

// zoomSig is an independent computation of Zoom's v0 signature, as Zoom's docs and
// zoom/webhook-sample describe it: "v0=" + hex HMAC-SHA256(secret, "v0:{ts}:{body}").
func zoomSig(secret, ts, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte("v0:" + ts + ":" + body))
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}

func zoomRequest(ts, sig, body string) *Request {
	h := Headers{}
	if ts != "" {
		h = append(h, Header{Name: "x-zm-request-timestamp", Value: ts})
	}
	if sig != "" {
		h = append(h, Header{Name: "x-zm-signature", Value: sig})
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

func zoomSigned(ts int64, body, secret string) *Request {
	s := strconv.FormatInt(ts, 10)
	return zoomRequest(s, zoomSig(secret, s, body), body)
}

// zoomWantID recomputes the documented identity independently.
func zoomWantID(event, ts, compactPayload string) string {
	h := sha256.New()
	for _, part := range []string{event, ts, compactPayload} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":" + part))
	}
	return "zoom-sha256:" + hex.EncodeToString(h.Sum(nil))
}

func TestZoomVerify(t *testing.T) {
	t.Parallel()
	p := Zoom()
	now := fixedNow.Unix()
	good := zoomSigned(now, zoomBody, zoomSecret)
	wantID := zoomWantID("meeting.started", "1699999999123", `{"account_id":"AAAAAABBBB","object":{"id":"1234567890","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"My Meeting","type":2}}`)
	tol := int64(zoomDefaultTolerance / time.Second)
	spaced := `{ "event" : "meeting.started", "event_ts" : 1699999999123, "payload" : { "account_id" : "AAAAAABBBB", "object" : {"id":"1234567890","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"My Meeting","type":2} }, "download_token": "abc" }`
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: good, keys: []string{zoomSecret}, wantKey: "k0", wantEvent: wantID},
		{name: "body tampered by one trailing space", req: withBody(good, []byte(zoomBody+" ")), keys: []string{zoomSecret}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: withHeader(good, "x-zm-request-timestamp", strconv.FormatInt(now+1, 10)), keys: []string{zoomSecret}, wantReason: ReasonSignatureMismatch},
		{name: "wrong secret", req: good, keys: []string{zoomSecretNew}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: old key matches", req: good, keys: []string{zoomSecret, zoomSecretNew}, wantKey: "k0", wantEvent: wantID},
		{name: "rotation: new key matches", req: zoomSigned(now, zoomBody, zoomSecretNew), keys: []string{zoomSecret, zoomSecretNew}, wantKey: "k1", wantEvent: wantID},
		{name: "header names case-insensitive", req: &Request{Headers: Headers{{Name: "X-Zm-Signature", Value: header(good, "x-zm-signature")}, {Name: "X-Zm-Request-Timestamp", Value: strconv.FormatInt(now, 10)}}, Body: []byte(zoomBody)}, keys: []string{zoomSecret}, wantKey: "k0", wantEvent: wantID},
		{name: "missing signature header", req: withoutHeader(good, "x-zm-signature"), keys: []string{zoomSecret}, wantReason: ReasonMissingSignature},
		{name: "empty signature header", req: withHeader(good, "x-zm-signature", ""), keys: []string{zoomSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: no =", req: withHeader(good, "x-zm-signature", strings.Repeat("a", 64)), keys: []string{zoomSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: bad hex", req: withHeader(good, "x-zm-signature", "v0=deadbeef"), keys: []string{zoomSecret}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: uppercase hex", req: withHeader(good, "x-zm-signature", "v0="+strings.ToUpper(header(good, "x-zm-signature")[3:])), keys: []string{zoomSecret}, wantReason: ReasonMalformedSignature},
		{name: "unknown version ignored", req: withHeader(good, "x-zm-signature", "v1="+header(good, "x-zm-signature")[3:]), keys: []string{zoomSecret}, wantReason: ReasonMissingSignature},
		{name: "missing timestamp", req: withoutHeader(good, "x-zm-request-timestamp"), keys: []string{zoomSecret}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not decimal", req: withHeader(good, "x-zm-request-timestamp", "1.7e9"), keys: []string{zoomSecret}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: zoomSigned(now-tol-1, zoomBody, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: zoomSigned(now+tol+1, zoomBody, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "last retry 85 minutes late, not re-signed, is accepted", req: zoomSigned(now-85*60, zoomBody, zoomSecret), keys: []string{zoomSecret}, params: Params{Now: fixedNow}, wantKey: "k0", wantEvent: wantID},
		{name: "endpoint tolerance narrower than default", req: zoomSigned(now-20, zoomBody, zoomSecret), keys: []string{zoomSecret}, params: Params{Now: fixedNow, Tolerance: 10 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "millisecond timestamp accepted", req: zoomSigned(now*1000+250, zoomBody, zoomSecret), keys: []string{zoomSecret}, wantKey: "k0", wantEvent: wantID},
		{name: "stale millisecond timestamp", req: zoomSigned((now-tol-1)*1000, zoomBody, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "bad signature beats stale timestamp", req: zoomSigned(now-100000, zoomBody, zoomSecretNew), keys: []string{zoomSecret}, wantReason: ReasonSignatureMismatch},
		{name: "identity ignores whitespace and top-level extras", req: zoomSigned(now, spaced, zoomSecret), keys: []string{zoomSecret}, wantKey: "k0", wantEvent: wantID},
		{name: "different event_ts is a different event", req: zoomSigned(now, strings.Replace(zoomBody, "1699999999123", "1699999999124", 1), zoomSecret), keys: []string{zoomSecret}, wantKey: "k0", wantEvent: zoomWantID("meeting.started", "1699999999124", `{"account_id":"AAAAAABBBB","object":{"id":"1234567890","uuid":"4444AAAiAAAAAiAiAiiAii==","topic":"My Meeting","type":2}}`)},
		{name: "no event", req: zoomSigned(now, `{"event_ts":1,"payload":{}}`, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonMissingEventID},
		{name: "no event_ts", req: zoomSigned(now, `{"event":"meeting.started","payload":{}}`, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonMissingEventID},
		{name: "event_ts not an integer", req: zoomSigned(now, `{"event":"meeting.started","event_ts":"1","payload":{}}`, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonMissingEventID},
		{name: "no payload", req: zoomSigned(now, `{"event":"meeting.started","event_ts":1}`, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonMissingEventID},
		{name: "payload not an object", req: zoomSigned(now, `{"event":"meeting.started","event_ts":1,"payload":[1]}`, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonMissingEventID},
		{name: "body not JSON", req: zoomSigned(now, `event=meeting.started`, zoomSecret), keys: []string{zoomSecret}, wantReason: ReasonMalformedPayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow, Tolerance: zoomDefaultTolerance}
			}
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && (res.EventID != tc.wantEvent || res.Handshake != nil) {
				t.Fatalf("result %+v, want event %q", res, tc.wantEvent)
			}
		})
	}
}

func TestZoomURLValidation(t *testing.T) {
	t.Parallel()
	p := Zoom()
	const body = `{"payload":{"plainToken":"qgg8vlPmX7TkqGZD3TdSaZ"},"event_ts":1654503849680,"event":"endpoint.url_validation"}`
	params := Params{Now: fixedNow}
	keys := keysFor(t, p, zoomSecretNew, zoomSecret)
	t.Run("correct reply under the matching key", func(t *testing.T) {
		t.Parallel()
		res, err := p.Verify(zoomSigned(fixedNow.Unix(), body, zoomSecret), keys, params)
		if err != nil {
			t.Fatal(err)
		}
		if res.Handshake == nil || res.KeyID != "k1" || res.EventID != "" {
			t.Fatalf("result %+v, want an authenticated handshake", res)
		}
		mac := hmac.New(sha256.New, []byte(zoomSecret))
		mac.Write([]byte("qgg8vlPmX7TkqGZD3TdSaZ"))
		var got map[string]string
		if err := json.Unmarshal(res.Handshake.Body, &got); err != nil {
			t.Fatal(err)
		}
		if res.Handshake.Status != 200 || len(got) != 2 || got["plainToken"] != "qgg8vlPmX7TkqGZD3TdSaZ" || got["encryptedToken"] != hex.EncodeToString(mac.Sum(nil)) {
			t.Fatalf("reply %d %s", res.Handshake.Status, res.Handshake.Body)
		}
		if ct := header(&Request{Headers: res.Handshake.Headers}, "Content-Type"); ct != "application/json" {
			t.Fatalf("Content-Type %q", ct)
		}
	})
	for _, tc := range []struct {
		name   string
		req    *Request
		reason Reason
	}{
		{"forged handshake rejected", zoomSigned(fixedNow.Unix(), body, "forger-secret-token"), ReasonSignatureMismatch},
		{"unsigned handshake rejected", &Request{Body: []byte(body)}, ReasonMissingSignature},
		{"handshake without plainToken", zoomSigned(fixedNow.Unix(), `{"event":"endpoint.url_validation","payload":{}}`, zoomSecret), ReasonMalformedPayload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keys, params)
			checkOutcome(t, res, err, tc.reason, "", tc.req)
		})
	}
}

// TestZoomDocumentedAlgorithm: no published Zoom vector with a real secret was found (the
// docs' example header, "v0=a05d830f...", is truncated and not hex), so this checks Sign
// against the algorithm as documented at https://developers.zoom.us/docs/api/webhooks/ and
// in zoom/webhook-sample index.js, computed independently.
func TestZoomDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	p := Zoom()
	h, err := p.Sign(SignInput{Body: []byte(zoomBody), Timestamp: time.Unix(1658940994, 0)}, []string{zoomSecret, zoomSecretNew})
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Headers: h}
	if len(h) != 2 || header(r, "x-zm-request-timestamp") != "1658940994" || header(r, "x-zm-signature") != zoomSig(zoomSecret, "1658940994", zoomBody) {
		t.Fatalf("Sign = %+v", h)
	}
}

func TestZoomParseSecret(t *testing.T) {
	t.Parallel()
	p := Zoom()
	for _, tc := range []struct {
		name    string
		secret  string
		wantErr bool
	}{
		{"token", zoomSecret, false},
		{"empty", "", true},
		{"surrounding whitespace", " " + zoomSecret, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			key, err := p.ParseSecret(tc.secret)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidSecret) || (tc.secret != "" && strings.Contains(err.Error(), strings.TrimSpace(tc.secret))) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || string(key) != tc.secret {
				t.Fatalf("ParseSecret = %q, %v", key, err)
			}
		})
	}
	for _, in := range []SignInput{{Body: []byte(zoomBody)}, {Body: []byte(zoomBody), Timestamp: time.Unix(-1, 0)}} {
		if _, err := p.Sign(in, []string{zoomSecret}); err == nil {
			t.Fatal("Sign without a valid timestamp succeeded")
		}
	}
	if _, err := p.Sign(SignInput{Body: []byte(zoomBody), Timestamp: fixedNow}, nil); err == nil {
		t.Fatal("Sign without secrets succeeded")
	}
}

func FuzzZoomSignatureHeader(f *testing.F) {
	p := Zoom()
	keys := keysFor(f, p, zoomSecret)
	params := Params{Now: fixedNow}
	ts := strconv.FormatInt(fixedNow.Unix(), 10)
	f.Add(zoomSig(zoomSecret, ts, zoomBody), ts, []byte(zoomBody), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig, timestamp string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(zoomRequest(timestamp, sig, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = parseZoomSignature(sig)
		checkAnswer(t, err)
		if top, err := jsonObject(body); err == nil {
			_, err = zoomEventID(top)
			checkAnswer(t, err)
		}

		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, zoomSecret)
		checkMutation(t, p, keys, params, req, "x-zm-signature", pos, repl)
		checkHeaderMutationRejected(t, p, keys, params, req, "x-zm-request-timestamp", pos, repl)
	})
}
