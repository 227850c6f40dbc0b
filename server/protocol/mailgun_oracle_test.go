package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mailgun/mailgun-go/v4"
)

const (
	mailgunOracleKey   = "0123456789abcdef0123456789abcdef-oracle"
	mailgunOracleToken = "a8ce0edb2dd8301dee6c2405235584e45aa91d1e9f979f3de0"
)

func mailgunOracleClient(key string) *mailgun.MailgunImpl {
	mg := mailgun.NewMailgun("mg.example.com", "api-key-unused")
	mg.SetWebhookSigningKey(key)
	return mg
}

// mailgunOracleVerify runs mailgun-go on a body: VerifyWebhookSignature on the decoded JSON
// payload's signature object, or the (deprecated) VerifyWebhookRequest on a legacy form body.
func mailgunOracleVerify(t *testing.T, key string, body []byte) bool {
	t.Helper()
	mg := mailgunOracleClient(key)
	if strings.HasPrefix(string(body), "{") {
		var payload mailgun.WebhookPayload
		if err := json.Unmarshal(body, &payload); err != nil {
			t.Fatal(err)
		}
		ok, err := mg.VerifyWebhookSignature(payload.Signature)
		return ok && err == nil
	}
	r, err := http.NewRequest("POST", "https://hooks.example.com/x", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	ok, err := mg.VerifyWebhookRequest(r)
	return ok && err == nil
}

// TestMailgunOracle cross-checks with mailgun-go's webhook signature verification. mailgun-go
// has no signer, so direction one embeds the signature it recomputes (hex HMAC-SHA256 of
// timestamp + token), checked against it first. mailgun-go checks no clock; our Params.Now
// is the signed timestamp (fixedNow).
//
// Mailgun signs only timestamp + token, not the event data (mailgun.go): the one-byte body
// change that both must reject is therefore made inside the token, and a change to the
// event data is accepted by both, which the last subtest pins.
func TestMailgunOracle(t *testing.T) {
	t.Parallel()
	p := Mailgun()
	params := Params{Now: fixedNow}
	ts := strconv.FormatInt(fixedNow.Unix(), 10)
	m := hmac.New(sha256.New, []byte(mailgunOracleKey))
	m.Write([]byte(ts + mailgunOracleToken))
	sig := hex.EncodeToString(m.Sum(nil))
	jsonBody := `{"signature":{"timestamp":"` + ts + `","token":"` + mailgunOracleToken + `","signature":"` + sig + `"},"event-data":{"id":"CPgfbmQMTCKtHW6uIWtuVe","event":"delivered","recipient":"alice@example.com"}}`
	formBody := url.Values{"timestamp": {ts}, "token": {mailgunOracleToken}, "signature": {sig}, "event": {"delivered"}, "recipient": {"alice@example.com"}}.Encode()
	for _, tc := range []struct{ name, body string }{{"json", jsonBody}, {"legacy form", formBody}} {
		t.Run("mailgun-go accepts, we verify/"+tc.name, func(t *testing.T) {
			if !mailgunOracleVerify(t, mailgunOracleKey, []byte(tc.body)) {
				t.Fatal("mailgun-go rejects the oracle delivery")
			}
			req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: []byte(tc.body)}
			res, err := p.Verify(req, keysFor(t, p, mailgunOracleKey), params)
			checkOutcome(t, res, err, 0, "k0", req)
			i := strings.Index(tc.body, mailgunOracleToken) + 5
			body := []byte(tc.body)
			body[i] ^= 1
			tampered := withBody(req, body)
			if mailgunOracleVerify(t, mailgunOracleKey, tampered.Body) {
				t.Fatal("mailgun-go accepts a tampered token")
			}
			res, err = p.Verify(tampered, keysFor(t, p, mailgunOracleKey), params)
			checkOutcome(t, res, err, ReasonSignatureMismatch, "", tampered)
		})
	}
	for _, tc := range []struct{ name, body string }{
		{"json", string(ExampleBody(p, "CPgfbmQMTCKtHW6uIWtuVe"))},
		{"legacy form", "event=delivered&recipient=alice%40example.com"},
	} {
		t.Run("we sign, mailgun-go verifies/"+tc.name, func(t *testing.T) {
			s, err := SignDelivery(p, SignInput{Body: []byte(tc.body), EventID: "CPgfbmQMTCKtHW6uIWtuVe", Timestamp: fixedNow}, []string{mailgunOracleKey})
			if err != nil {
				t.Fatal(err)
			}
			if !mailgunOracleVerify(t, mailgunOracleKey, s.Body) {
				t.Fatalf("mailgun-go rejects our delivery %s", s.Body)
			}
			if mailgunOracleVerify(t, "another signing key", s.Body) {
				t.Fatal("mailgun-go accepts our delivery under another key")
			}
			tampered := strings.Replace(string(s.Body), ts, strconv.FormatInt(fixedNow.Unix()+1, 10), 1)
			if mailgunOracleVerify(t, mailgunOracleKey, []byte(tampered)) {
				t.Fatal("mailgun-go accepts a tampered timestamp")
			}
		})
	}
	t.Run("event data is unsigned for both", func(t *testing.T) {
		body := []byte(strings.Replace(jsonBody, "alice@", "mallory@", 1))
		if !mailgunOracleVerify(t, mailgunOracleKey, body) {
			t.Fatal("mailgun-go now rejects changed event data: revisit mailgun.go's StaticCredential note")
		}
		req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: body}
		res, err := p.Verify(req, keysFor(t, p, mailgunOracleKey), params)
		checkOutcome(t, res, err, 0, "k0", req)
	})
}
