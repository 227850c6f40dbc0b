package protocol

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"testing"

	"github.com/PagerDuty/go-pagerduty/webhookv3"
)

const (
	pagerdutyOracleSecret    = "lDQHScfUeXUKaQRNF+8XIiDKZ7XX3itBAYzwU0TARw8lJqRnkKl2iB1anSb0Z+IK"
	pagerdutyOracleSecretNew = "3f8WbqJ4s0hFSr6Yx2m9ZKt7LQwP1vNcE5aUoGdRiTjXyHk0Bz+lM4pCe8nVq2A/"
	pagerdutyOracleHookID    = "0a1b2c3d-oracle-hook"
	pagerdutyOracleBody      = `{"event":{"id":"01BWDWL3NYY7LUFPZCC28QUCMK","event_type":"incident.triggered","resource_type":"incident"}}`
)

// pagerdutyOracleVerify runs go-pagerduty's webhookv3.VerifySignature on an http.Request
// rebuilt from headers and body.
func pagerdutyOracleVerify(t *testing.T, headers Headers, body []byte, secret string) error {
	t.Helper()
	r, err := http.NewRequest("POST", "https://hooks.example.com/x", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		r.Header.Add(h.Name, h.Value)
	}
	return webhookv3.VerifySignature(r, secret)
}

// TestPagerDutyOracle cross-checks with go-pagerduty's webhookv3. go-pagerduty has no signer,
// so direction one builds the header it verifies (checked against it) and hands it to our
// Verify. Nothing is timed, so the test is fully deterministic.
//
// Known differences, deliberately not exercised as agreement: we tolerate spaces after the
// commas of the list (go-pagerduty does not trim, see pagerduty.go), and we require lowercase
// hex where go-pagerduty's hex.DecodeString also takes uppercase.
func TestPagerDutyOracle(t *testing.T) {
	t.Parallel()
	p := PagerDuty()
	mac := func(secret string) string {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte(pagerdutyOracleBody))
		return "v1=" + hex.EncodeToString(m.Sum(nil))
	}
	t.Run("go-pagerduty accepts, we verify", func(t *testing.T) {
		t.Parallel()
		for _, sig := range []string{
			mac(pagerdutyOracleSecret),
			mac(pagerdutyOracleSecretNew) + "," + mac(pagerdutyOracleSecret),
			"v2=ignored," + mac(pagerdutyOracleSecret),
		} {
			req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: []byte(pagerdutyOracleBody), Headers: Headers{
				{Name: "X-PagerDuty-Signature", Value: sig},
				{Name: "X-Webhook-Id", Value: pagerdutyOracleHookID},
			}}
			if err := pagerdutyOracleVerify(t, req.Headers, req.Body, pagerdutyOracleSecret); err != nil {
				t.Fatalf("go-pagerduty rejects %q: %v", sig, err)
			}
			res, err := p.Verify(req, keysFor(t, p, pagerdutyOracleSecret), Params{})
			checkOutcome(t, res, err, 0, "k0", req)
			if res.EventID != pagerdutyOracleHookID {
				t.Fatalf("EventID = %q", res.EventID)
			}
			body := []byte(pagerdutyOracleBody)
			body[3] ^= 1
			tampered := withBody(req, body)
			if pagerdutyOracleVerify(t, tampered.Headers, tampered.Body, pagerdutyOracleSecret) == nil {
				t.Fatal("go-pagerduty accepts a tampered body")
			}
			res, err = p.Verify(tampered, keysFor(t, p, pagerdutyOracleSecret), Params{})
			checkOutcome(t, res, err, ReasonSignatureMismatch, "", tampered)
		}
	})
	t.Run("we sign with two secrets, go-pagerduty verifies with each", func(t *testing.T) {
		t.Parallel()
		s, err := SignDelivery(p, SignInput{Body: []byte(pagerdutyOracleBody), EventID: pagerdutyOracleHookID}, []string{pagerdutyOracleSecret, pagerdutyOracleSecretNew})
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{pagerdutyOracleSecret, pagerdutyOracleSecretNew} {
			if err := pagerdutyOracleVerify(t, s.Headers, s.Body, secret); err != nil {
				t.Fatalf("go-pagerduty rejects our delivery: %v", err)
			}
			if err := pagerdutyOracleVerify(t, s.Headers, append(append([]byte(nil), s.Body...), ' '), secret); err == nil {
				t.Fatal("go-pagerduty accepts a tampered body")
			}
		}
		if err := pagerdutyOracleVerify(t, s.Headers, s.Body, "another secret"); err == nil {
			t.Fatal("go-pagerduty accepts our delivery under another secret")
		}
	})
	t.Run("agreement on rejections", func(t *testing.T) {
		t.Parallel()
		good := mac(pagerdutyOracleSecret)
		for _, sig := range []string{"", "v1", "v1=", "v1=zz", "v0=" + good[3:], good + "00", "v1=" + hex.EncodeToString(make([]byte, 32)), mac(pagerdutyOracleSecretNew)} {
			hs := Headers{{Name: "X-Webhook-Id", Value: pagerdutyOracleHookID}}
			if sig != "" {
				hs = append(hs, Header{Name: "X-PagerDuty-Signature", Value: sig})
			}
			if pagerdutyOracleVerify(t, hs, []byte(pagerdutyOracleBody), pagerdutyOracleSecret) == nil {
				t.Errorf("go-pagerduty accepts %q", sig)
			}
			if _, err := p.Verify(&Request{Headers: hs, Body: []byte(pagerdutyOracleBody)}, keysFor(t, p, pagerdutyOracleSecret), Params{}); err == nil {
				t.Errorf("we accept %q", sig)
			}
		}
	})
}
