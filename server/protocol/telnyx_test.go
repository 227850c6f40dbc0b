package protocol

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// telnyxBody is the DUMMY_WEBHOOK_PAYLOAD shape of team-telnyx/telnyx-python
// tests/test_webhook.py, wrapped in the API v2 envelope ({"data": ..., "meta": ...}).
const telnyxBody = `{"data":{"record_type":"event","id":"0ccc7b54-4df3-4bca-a65a-3da1ecc777f0","event_type":"call.initiated","occurred_at":"2018-02-02T22:25:27.521992Z","payload":{"to":"+13129457420","from":"+35319605860","call_control_id":"AgDIxmoRX6QMuaIj_uXRXnPAXP0QlNfXczRrZvZakpWxBlpw48KyZQ==","direction":"incoming","state":"parked"}},"meta":{"attempt":1,"delivered_to":"https://example.com/webhooks"}}`

// telnyxKeys returns the RFC 8032 TEST 1 or TEST 2 key pair as Telnyx encodes it: base64
// seed (PyNaCl SigningKey) and base64 public key (portal).
func telnyxKeys(t testing.TB, privHex string) (seed, pub string) {
	t.Helper()
	raw, err := hex.DecodeString(privHex)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(raw[:32]), base64.StdEncoding.EncodeToString(raw[32:])
}

func telnyxRequest(ts, sig, body string) *Request {
	h := Headers{}
	if sig != "" {
		h = append(h, Header{Name: "telnyx-signature-ed25519", Value: sig})
	}
	if ts != "" {
		h = append(h, Header{Name: "telnyx-timestamp", Value: ts})
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

// telnyxSignIndependent signs the way telnyx-python's test signer does:
// base64(Ed25519(timestamp + b"|" + payload)).
func telnyxSignIndependent(t testing.TB, privHex, ts, body string) string {
	t.Helper()
	raw, _ := hex.DecodeString(privHex)
	return base64.StdEncoding.EncodeToString(ed25519.Sign(ed25519.NewKeyFromSeed(raw[:32]), []byte(ts+"|"+body)))
}

func telnyxSigned(t testing.TB, ts int64, body, privHex string) *Request {
	s := strconv.FormatInt(ts, 10)
	return telnyxRequest(s, telnyxSignIndependent(t, privHex, s, body), body)
}

func TestTelnyxVerify(t *testing.T) {
	t.Parallel()
	p := Telnyx()
	_, pub1 := telnyxKeys(t, rfc8032Test1Private)
	_, pub2 := telnyxKeys(t, rfc8032Test2Private)
	now := fixedNow.Unix()
	good := telnyxSigned(t, now, telnyxBody, rfc8032Test1Private)
	const id = "0ccc7b54-4df3-4bca-a65a-3da1ecc777f0"
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: good, keys: []string{pub1}, wantKey: "k0", wantEvent: id},
		{name: "body tampered by one trailing space", req: withBody(good, []byte(telnyxBody+" ")), keys: []string{pub1}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: withHeader(good, "telnyx-timestamp", strconv.FormatInt(now+1, 10)), keys: []string{pub1}, wantReason: ReasonSignatureMismatch},
		{name: "wrong key", req: good, keys: []string{pub2}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: first key matches", req: good, keys: []string{pub1, pub2}, wantKey: "k0", wantEvent: id},
		{name: "rotation: second key matches", req: telnyxSigned(t, now, telnyxBody, rfc8032Test2Private), keys: []string{pub1, pub2}, wantKey: "k1", wantEvent: id},
		{name: "header names case-insensitive", req: &Request{Headers: Headers{{"Telnyx-Signature-Ed25519", header(good, "telnyx-signature-ed25519")}, {"Telnyx-Timestamp", header(good, "telnyx-timestamp")}}, Body: []byte(telnyxBody)}, keys: []string{pub1}, wantKey: "k0", wantEvent: id},
		{name: "missing signature header", req: withoutHeader(good, "telnyx-signature-ed25519"), keys: []string{pub1}, wantReason: ReasonMissingSignature},
		{name: "empty signature header", req: withHeader(good, "telnyx-signature-ed25519", ""), keys: []string{pub1}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: unpadded", req: withHeader(good, "telnyx-signature-ed25519", strings.TrimRight(header(good, "telnyx-signature-ed25519"), "=")), keys: []string{pub1}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: hex instead of base64", req: withHeader(good, "telnyx-signature-ed25519", strings.Repeat("ab", 64)), keys: []string{pub1}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: url-safe alphabet", req: withHeader(good, "telnyx-signature-ed25519", strings.Repeat("-_", 43)+"A="), keys: []string{pub1}, wantReason: ReasonMalformedSignature},
		{name: "missing timestamp", req: withoutHeader(good, "telnyx-timestamp"), keys: []string{pub1}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not decimal", req: withHeader(good, "telnyx-timestamp", "1700000000.5"), keys: []string{pub1}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: telnyxSigned(t, now-301, telnyxBody, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future (the SDKs would accept)", req: telnyxSigned(t, now+301, telnyxBody, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "exactly tolerance old is accepted", req: telnyxSigned(t, now-300, telnyxBody, rfc8032Test1Private), keys: []string{pub1}, wantKey: "k0", wantEvent: id},
		{name: "endpoint tolerance narrower than default", req: telnyxSigned(t, now-20, telnyxBody, rfc8032Test1Private), keys: []string{pub1}, params: Params{Now: fixedNow, Tolerance: 10 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "bad signature beats stale timestamp", req: telnyxSigned(t, now-3600, telnyxBody, rfc8032Test2Private), keys: []string{pub1}, wantReason: ReasonSignatureMismatch},
		{name: "retry (meta.attempt 2) keeps the identity", req: telnyxSigned(t, now, strings.Replace(telnyxBody, `"attempt":1`, `"attempt":2`, 1), rfc8032Test1Private), keys: []string{pub1}, wantKey: "k0", wantEvent: id},
		{name: "link_clicked record without id: body-hash identity", req: telnyxSigned(t, now, `{"data":{"record_type":"link_clicked","url":"https://telnyx.com","to":"18445550001","message_id":"7ee4241c-f127-47e5-9c34-3aac291f8058","time_clicked":"2019-04-01T14:45:45.450Z"}}`, rfc8032Test1Private), keys: []string{pub1}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`{"data":{"record_type":"link_clicked","url":"https://telnyx.com","to":"18445550001","message_id":"7ee4241c-f127-47e5-9c34-3aac291f8058","time_clicked":"2019-04-01T14:45:45.450Z"}}`))},
		{name: "no data object", req: telnyxSigned(t, now, `{"record_type":"event","id":"x"}`, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonMissingEventID},
		{name: "event record without data.id", req: telnyxSigned(t, now, `{"data":{"record_type":"event","event_type":"call.initiated"}}`, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonMissingEventID},
		{name: "no data.id", req: telnyxSigned(t, now, `{"data":{"event_type":"call.initiated"}}`, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonMissingEventID},
		{name: "top-level id is not data.id", req: telnyxSigned(t, now, `{"id":"x","data":{}}`, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonMissingEventID},
		{name: "data.id not a string", req: telnyxSigned(t, now, `{"data":{"id":5}}`, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonMissingEventID},
		{name: "body not JSON (telnyx-python raises too)", req: telnyxSigned(t, now, `this is not valid JSON`, rfc8032Test1Private), keys: []string{pub1}, wantReason: ReasonMalformedPayload},
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

// TestTelnyxDocumentedAlgorithm: Telnyx publishes no signed sample (telnyx-python's tests sign
// with a freshly generated key), so this pins the documented algorithm — Ed25519 over
// "{timestamp}|{body}", base64 — with the RFC 8032 TEST 1 key: Sign must equal the
// independent signer, which mirrors telnyx-python tests/test_webhook.py.
func TestTelnyxDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	p := Telnyx()
	seed1, _ := telnyxKeys(t, rfc8032Test1Private)
	seed2, _ := telnyxKeys(t, rfc8032Test2Private)
	h, err := p.Sign(SignInput{Body: []byte(telnyxBody), Timestamp: time.Unix(1517610327, 0)}, []string{seed1, seed2})
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Headers: h}
	if header(r, "telnyx-timestamp") != "1517610327" || header(r, "telnyx-signature-ed25519") != telnyxSignIndependent(t, rfc8032Test1Private, "1517610327", telnyxBody) {
		t.Fatalf("Sign = %+v", h)
	}
}

func TestTelnyxSecrets(t *testing.T) {
	t.Parallel()
	p := Telnyx()
	seed, pub := telnyxKeys(t, rfc8032Test1Private)
	if _, err := p.ParseSecret(pub); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", strings.TrimRight(pub, "="), rfc8032Test1Public, "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=\n-----END PUBLIC KEY-----"} {
		if _, err := p.ParseSecret(s); !errors.Is(err, ErrInvalidSecret) || (s != "" && strings.Contains(err.Error(), s)) {
			t.Errorf("ParseSecret(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", pub + "x", rfc8032Test1Private} {
		if _, err := p.Sign(SignInput{Body: []byte(telnyxBody), Timestamp: fixedNow}, []string{s}); err == nil {
			t.Errorf("Sign with %q succeeded", s)
		}
	}
	if _, err := p.Sign(SignInput{Body: []byte(telnyxBody)}, []string{seed}); err == nil {
		t.Error("Sign without a timestamp succeeded")
	}
	if _, err := p.Sign(SignInput{Body: []byte(telnyxBody), Timestamp: fixedNow}, nil); err == nil {
		t.Error("Sign without a key succeeded")
	}
}

func FuzzTelnyxSignatureHeader(f *testing.F) {
	p := Telnyx()
	seed, pub := telnyxKeys(f, rfc8032Test1Private)
	keys := keysFor(f, p, pub)
	params := Params{Now: fixedNow}
	ts := strconv.FormatInt(fixedNow.Unix(), 10)
	f.Add(telnyxSignIndependent(f, rfc8032Test1Private, ts, telnyxBody), ts, []byte(telnyxBody), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig, timestamp string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(telnyxRequest(timestamp, sig, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = telnyxEventID(body)
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, seed)
		checkMutation(t, p, keys, params, req, "telnyx-signature-ed25519", pos, repl)
		checkHeaderMutationRejected(t, p, keys, params, req, "telnyx-timestamp", pos, repl)
	})
}
