package protocol

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/slack-go/slack"
)

const (
	slackOracleSecret = "8f742231b10e8888abcd99yyyzzz85a5"
	slackOracleBody   = `{"token":"x","team_id":"T1","type":"event_callback","event_id":"Ev0ORACLE1","event":{"type":"app_mention"}}`
	slackOracleForm   = "token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T0001&command=%2Fweather&text=94070&trigger_id=1.2.3"
)

// slackOracleVerify runs slack-go's SecretsVerifier over body and the request's headers.
func slackOracleVerify(req *Request, body []byte, secret string) error {
	hdr := http.Header{}
	for _, h := range req.Headers {
		hdr.Add(h.Name, h.Value)
	}
	sv, err := slack.NewSecretsVerifier(hdr, secret)
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	return sv.Ensure()
}

// TestSlackOracle cross-checks with slack-go. slack-go has no signer, so direction one builds
// the exact header slack-go verifies (and checks slack-go accepts it) before our Verify sees
// it. slack-go reads the real clock, so deliveries are signed at time.Now().
func TestSlackOracle(t *testing.T) {
	t.Parallel()
	p := Slack()
	now := time.Now()
	params := Params{Now: now, Tolerance: 5 * time.Minute}
	for _, body := range []string{slackOracleBody, slackOracleForm} {
		t.Run("slack-go accepts, we verify/"+body[:5], func(t *testing.T) {
			ts := strconv.FormatInt(now.Unix(), 10)
			mac := hmac.New(sha256.New, []byte(slackOracleSecret))
			mac.Write([]byte("v0:" + ts + ":" + body))
			req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: []byte(body), Headers: Headers{
				{Name: "X-Slack-Request-Timestamp", Value: ts},
				{Name: "X-Slack-Signature", Value: "v0=" + hex.EncodeToString(mac.Sum(nil))},
			}}
			if err := slackOracleVerify(req, req.Body, slackOracleSecret); err != nil {
				t.Fatalf("slack-go rejects the oracle delivery: %v", err)
			}
			res, err := p.Verify(req, keysFor(t, p, slackOracleSecret), params)
			checkOutcome(t, res, err, 0, "k0", req)
			tampered := withBody(req, append([]byte(body[:len(body)-1]), body[len(body)-1]^1))
			res, err = p.Verify(tampered, keysFor(t, p, slackOracleSecret), params)
			checkOutcome(t, res, err, ReasonSignatureMismatch, "", tampered)
		})
		t.Run("we sign, slack-go verifies/"+body[:5], func(t *testing.T) {
			s, err := SignDelivery(p, SignInput{Body: []byte(body), Timestamp: now}, []string{slackOracleSecret})
			if err != nil {
				t.Fatal(err)
			}
			req := &Request{Headers: s.Headers, Body: s.Body}
			if err := slackOracleVerify(req, req.Body, slackOracleSecret); err != nil {
				t.Fatalf("slack-go rejects our delivery: %v", err)
			}
			if err := slackOracleVerify(req, append(append([]byte(nil), req.Body...), ' '), slackOracleSecret); err == nil {
				t.Fatal("slack-go accepts a tampered body")
			}
			if err := slackOracleVerify(req, req.Body, "0123456789abcdef0123456789abcdef"); err == nil {
				t.Fatal("slack-go accepts our delivery under another secret")
			}
		})
	}
}
