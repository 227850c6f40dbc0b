package protocol

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Published vectors:
//   - sendgrid/sendgrid-go helpers/eventwebhook/eventwebhook_test.go (also
//     sendgrid/sendgrid-nodejs packages/eventwebhook/src/eventwebhook.spec.js): a P-256 key
//     pair, timestamp 1588788367 and a single JSON object (no CRLF, not an array);
//   - sendgrid/sendgrid-python test/test_eventwebhook.py: public key MFkw...83T4O..., timestamp
//     1600112502 and a one-event array followed by "\r\n" ("Be sure to include the trailing
//     carriage return and newline!").
const (
	sgGoPublicKey  = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
	sgGoPrivateKey = "MHcCAQEEIEQmZgBEh9DcU9zMl34czK3xov4AYvm9P3r7rNB2dNXtoAoGCCqGSM49AwEHoUQDQgAEEDr2LjtURuePQzplybdC+u4CwrqDqBaWjcMMsTbhdbcwHBcepxo7yAQGhHPTnlvFYPAZFceEu/1FwCM/QmGUhA=="
	sgGoSignature  = "MEUCIQCtIHJeH93Y+qpYeWrySphQgpNGNr/U+UyUlBkU6n7RAwIgJTz2C+8a8xonZGi6BpSzoQsbVRamr2nlxFDWYNH2j/0="
	sgGoTimestamp  = "1588788367"
	sgGoPayload    = `{"category":"example_payload","event":"test_event","message_id":"message_id"}`

	sgPyPublicKey = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE83T4O/n84iotIvIW4mdBgQ/7dAfSmpqIM8kF9mN1flpVKS3GRqe62gw+2fNNRaINXvVpiglSI8eNEc6wEA3F+g=="
	sgPySignature = "MEUCIGHQVtGj+Y3LkG9fLcxf3qfI10QysgDWmMOVmxG0u6ZUAiEAyBiXDWzM+uOe5W0JuG+luQAbPIqHh89M15TluLtEZtM="
	sgPyTimestamp = "1600112502"
	sgPyPayload   = `[{"email":"hello@world.com","event":"dropped","reason":"Bounced Address","sg_event_id":"ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA","sg_message_id":"LRzXl_NHStOGhQ4kofSm_A.filterdrecv-p3mdw1-756b745b58-kmzbl-18-5F5FC76C-9.0","smtp-id":"<LRzXl_NHStOGhQ4kofSm_A@ismtpd0039p1iad1.sendgrid.net>","timestamp":1600112492}]` + "\r\n"

	sgBody = `[{"email":"a@example.com","event":"processed","sg_event_id":"cHJvY2Vzc2VkLTEtQQ","timestamp":1700000000},` + "\r\n" +
		`{"email":"b@example.com","event":"delivered","sg_event_id":"ZGVsaXZlcmVkLTItQg","timestamp":1700000001}]` + "\r\n"
)

func sgRequest(ts, sig, body string) *Request {
	h := Headers{}
	if sig != "" {
		h = append(h, Header{Name: "X-Twilio-Email-Event-Webhook-Signature", Value: sig})
	}
	if ts != "" {
		h = append(h, Header{Name: "X-Twilio-Email-Event-Webhook-Timestamp", Value: ts})
	}
	return &Request{Method: "POST", Headers: h, Body: []byte(body)}
}

// sgSignIndependent signs as SendGrid does, through x509/ecdsa directly.
func sgSignIndependent(t testing.TB, privB64, ts, body string) string {
	t.Helper()
	der, _ := base64.StdEncoding.DecodeString(privB64)
	k, err := x509.ParseECPrivateKey(der)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256([]byte(ts + body))
	sig, err := ecdsa.SignASN1(rand.Reader, k, d[:])
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(sig)
}

func sgSigned(t testing.TB, ts int64, body, priv string) *Request {
	s := strconv.FormatInt(ts, 10)
	return sgRequest(s, sgSignIndependent(t, priv, s, body), body)
}

func sgBatchID(ids ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))
	return "sg-events-sha256:" + hex.EncodeToString(sum[:])
}

func TestSendGridPublishedVectors(t *testing.T) {
	t.Parallel()
	p := SendGrid()
	t.Run("sendgrid-python array with CRLF", func(t *testing.T) {
		t.Parallel()
		req := sgRequest(sgPyTimestamp, sgPySignature, sgPyPayload)
		res, err := p.Verify(req, keysFor(t, p, sgPyPublicKey), Params{Now: time.Unix(1600112502+60, 0)})
		checkOutcome(t, res, err, 0, "k0", req)
		if res.EventID != "ZHJvcC0xMDk5NDkxOS1MUnpYbF9OSFN0T0doUTRrb2ZTbV9BLTA" {
			t.Fatalf("EventID = %q", res.EventID)
		}
	})
	t.Run("sendgrid-python vector without the trailing CRLF fails", func(t *testing.T) {
		t.Parallel()
		req := sgRequest(sgPyTimestamp, sgPySignature, strings.TrimSuffix(sgPyPayload, "\r\n"))
		res, err := p.Verify(req, keysFor(t, p, sgPyPublicKey), Params{Now: time.Unix(1600112502, 0)})
		checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	})
	t.Run("sendgrid-go vector authenticates; its body is not an event array", func(t *testing.T) {
		t.Parallel()
		req := sgRequest(sgGoTimestamp, sgGoSignature, sgGoPayload)
		res, err := p.Verify(req, keysFor(t, p, sgGoPublicKey), Params{Now: time.Unix(1588788367, 0)})
		checkOutcome(t, res, err, ReasonMalformedPayload, "", req)
		// The same signature under the other published key does not verify.
		res, err = p.Verify(req, keysFor(t, p, sgPyPublicKey), Params{Now: time.Unix(1588788367, 0)})
		checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	})
	t.Run("sendgrid-go private key signs what its public key verifies", func(t *testing.T) {
		t.Parallel()
		h, err := p.Sign(SignInput{Body: []byte(sgPyPayload), Timestamp: time.Unix(1600112502, 0)}, []string{sgGoPrivateKey})
		if err != nil {
			t.Fatal(err)
		}
		req := &Request{Headers: h, Body: []byte(sgPyPayload)}
		res, err := p.Verify(req, keysFor(t, p, sgPyPublicKey, sgGoPublicKey), Params{Now: time.Unix(1600112502, 0)})
		checkOutcome(t, res, err, 0, "k1", req)
	})
}

func TestSendGridVerify(t *testing.T) {
	t.Parallel()
	p := SendGrid()
	now := fixedNow.Unix()
	good := sgSigned(t, now, sgBody, sgGoPrivateKey)
	_, otherPub, err := exampleSendGridSecret()
	if err != nil {
		t.Fatal(err)
	}
	tol := int64(sendgridDefaultTolerance / time.Second)
	twoID := sgBatchID("ZGVsaXZlcmVkLTItQg", "cHJvY2Vzc2VkLTEtQQ")
	sig := header(good, "X-Twilio-Email-Event-Webhook-Signature")
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		params     Params
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "accepted", req: good, keys: []string{sgGoPublicKey}, wantKey: "k0", wantEvent: twoID},
		{name: "body tampered by one trailing space", req: withBody(good, []byte(sgBody+" ")), keys: []string{sgGoPublicKey}, wantReason: ReasonSignatureMismatch},
		{name: "trailing CRLF stripped", req: withBody(good, []byte(strings.TrimSuffix(sgBody, "\r\n"))), keys: []string{sgGoPublicKey}, wantReason: ReasonSignatureMismatch},
		{name: "timestamp tampered", req: withHeader(good, "X-Twilio-Email-Event-Webhook-Timestamp", strconv.FormatInt(now+1, 10)), keys: []string{sgGoPublicKey}, wantReason: ReasonSignatureMismatch},
		{name: "wrong key", req: good, keys: []string{sgPyPublicKey}, wantReason: ReasonSignatureMismatch},
		{name: "no keys", req: good, wantReason: ReasonSignatureMismatch},
		{name: "rotation: first key matches", req: good, keys: []string{sgGoPublicKey, otherPub}, wantKey: "k0", wantEvent: twoID},
		{name: "rotation: second key matches", req: good, keys: []string{otherPub, sgGoPublicKey}, wantKey: "k1", wantEvent: twoID},
		{name: "missing signature header", req: withoutHeader(good, "X-Twilio-Email-Event-Webhook-Signature"), keys: []string{sgGoPublicKey}, wantReason: ReasonMissingSignature},
		{name: "empty signature header", req: withHeader(good, "X-Twilio-Email-Event-Webhook-Signature", ""), keys: []string{sgGoPublicKey}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: not base64", req: withHeader(good, "X-Twilio-Email-Event-Webhook-Signature", "not base64!"), keys: []string{sgGoPublicKey}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: base64 of garbage", req: withHeader(good, "X-Twilio-Email-Event-Webhook-Signature", "AAAA"), keys: []string{sgGoPublicKey}, wantReason: ReasonMalformedSignature},
		{name: "malformed header: trailing bytes after DER", req: withHeader(good, "X-Twilio-Email-Event-Webhook-Signature", base64.StdEncoding.EncodeToString(append(mustB64(t, sig), 0))), keys: []string{sgGoPublicKey}, wantReason: ReasonMalformedSignature},
		{name: "well-formed but wrong signature (published one, other body)", req: withHeader(good, "X-Twilio-Email-Event-Webhook-Signature", sgGoSignature), keys: []string{sgGoPublicKey}, wantReason: ReasonSignatureMismatch},
		{name: "missing timestamp", req: withoutHeader(good, "X-Twilio-Email-Event-Webhook-Timestamp"), keys: []string{sgGoPublicKey}, wantReason: ReasonMissingTimestamp},
		{name: "timestamp not decimal", req: withHeader(good, "X-Twilio-Email-Event-Webhook-Timestamp", "invalid timestamp"), keys: []string{sgGoPublicKey}, wantReason: ReasonMissingTimestamp},
		{name: "stale", req: sgSigned(t, now-tol-1, sgBody, sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "future", req: sgSigned(t, now+tol+1, sgBody, sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "retry 23 hours later, not re-signed, accepted", req: sgSigned(t, now-23*3600, sgBody, sgGoPrivateKey), keys: []string{sgGoPublicKey}, params: Params{Now: fixedNow}, wantKey: "k0", wantEvent: twoID},
		{name: "endpoint tolerance narrower than default", req: sgSigned(t, now-20, sgBody, sgGoPrivateKey), keys: []string{sgGoPublicKey}, params: Params{Now: fixedNow, Tolerance: 10 * time.Second}, wantReason: ReasonTimestampOutOfTolerance},
		{name: "bad signature beats stale timestamp", req: withHeader(sgSigned(t, now-200000, sgBody, sgGoPrivateKey), "X-Twilio-Email-Event-Webhook-Signature", sgGoSignature), keys: []string{sgGoPublicKey}, wantReason: ReasonSignatureMismatch},
		{name: "batch order does not change identity", req: sgSigned(t, now, `[{"sg_event_id":"ZGVsaXZlcmVkLTItQg"},{"sg_event_id":"cHJvY2Vzc2VkLTEtQQ"}]`+"\r\n", sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantKey: "k0", wantEvent: twoID},
		{name: "repeated sg_event_id counted once", req: sgSigned(t, now, `[{"sg_event_id":"QQ"},{"sg_event_id":"QQ"}]`+"\r\n", sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantKey: "k0", wantEvent: "QQ"},
		{name: "event without sg_event_id: body-hash identity", req: sgSigned(t, now, `[{"sg_event_id":"QQ"},{"event":"group_resubscribe"}]`+"\r\n", sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantKey: "k0", wantEvent: bodySHA256ID([]byte(`[{"sg_event_id":"QQ"},{"event":"group_resubscribe"}]` + "\r\n"))},
		{name: "empty array", req: sgSigned(t, now, "[]\r\n", sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantReason: ReasonMissingEventID},
		{name: "sg_event_id not a string", req: sgSigned(t, now, `[{"sg_event_id":1}]`, sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantReason: ReasonMissingEventID},
		{name: "array of non-objects", req: sgSigned(t, now, `[1,2]`, sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantReason: ReasonMalformedPayload},
		{name: "array with null", req: sgSigned(t, now, `[null]`, sgGoPrivateKey), keys: []string{sgGoPublicKey}, wantReason: ReasonMalformedPayload},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			params := tc.params
			if params.Now.IsZero() {
				params = Params{Now: fixedNow, Tolerance: sendgridDefaultTolerance}
			}
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), params)
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if tc.wantReason == 0 && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSendGridSecrets(t *testing.T) {
	t.Parallel()
	p := SendGrid()
	for _, s := range []string{"", "not base64!", base64.StdEncoding.EncodeToString([]byte("not DER")), sgGoPrivateKey,
		"-----BEGIN PUBLIC KEY-----\n" + sgGoPublicKey + "\n-----END PUBLIC KEY-----",
		// An Ed25519 SubjectPublicKeyInfo (RFC 8032 TEST 1 key) is not a P-256 key.
		"MCowBQYDK2VwAyEA11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo="} {
		if _, err := p.ParseSecret(s); !errors.Is(err, ErrInvalidSecret) || (len(s) > 4 && strings.Contains(err.Error(), s)) {
			t.Errorf("ParseSecret(%.20q) = %v", s, err)
		}
	}
	for _, s := range []string{"", sgGoPublicKey, "%%%"} {
		if _, err := p.Sign(SignInput{Body: []byte(sgBody), Timestamp: fixedNow}, []string{s}); err == nil {
			t.Errorf("Sign with %.20q succeeded", s)
		}
	}
	if _, err := p.Sign(SignInput{Body: []byte(sgBody)}, []string{sgGoPrivateKey}); err == nil {
		t.Error("Sign without a timestamp succeeded")
	}
	// PKCS#8 signing keys are accepted too.
	der, _ := base64.StdEncoding.DecodeString(sgGoPrivateKey)
	k, err := x509.ParseECPrivateKey(der)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	req := signed(t, p, SignInput{Body: []byte(sgBody), Timestamp: fixedNow}, base64.StdEncoding.EncodeToString(pkcs8))
	res, err := p.Verify(req, keysFor(t, p, sgGoPublicKey), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
}

func FuzzSendGridSignatureHeader(f *testing.F) {
	p := SendGrid()
	keys := keysFor(f, p, sgGoPublicKey)
	params := Params{Now: fixedNow}
	f.Add(sgPySignature, sgPyTimestamp, []byte(sgPyPayload), uint16(3), byte('9'))
	f.Fuzz(func(t *testing.T, sig, timestamp string, body []byte, pos uint16, repl byte) {
		_, err := p.Verify(sgRequest(timestamp, sig, string(body)), keys, params)
		checkAnswer(t, err)
		_, err = parseSendGridSignature(sig)
		checkAnswer(t, err)
		_, err = sendgridEventID(body)
		checkAnswer(t, err)

		req := signed(t, p, SignInput{Body: body, Timestamp: fixedNow}, sgGoPrivateKey)
		checkMutation(t, p, keys, params, req, "X-Twilio-Email-Event-Webhook-Signature", pos, repl)
		checkHeaderMutationRejected(t, p, keys, params, req, "X-Twilio-Email-Event-Webhook-Timestamp", pos, repl)
	})
}
