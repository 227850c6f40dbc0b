package protocol

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"sort"
	"testing"

	twilioclient "github.com/twilio/twilio-go/client"
)

const (
	twilioOracleToken = "0123456789abcdef0123456789abcdef"
	twilioOracleURL   = "https://mycompany.com/myapp.php?foo=1&bar=2"
	twilioOracleForm  = "CallSid=CA1234567890ABCDE&Caller=%2B14158675309&Digits=1234&From=%2B14158675309&To=%2B18005551212&Body=hello+world+%26+more"
	twilioOracleJSON  = `{"property": "value", "boolean": true}`
)

// twilioOracleSign computes the signature twilio-go's RequestValidator recomputes: base64
// HMAC-SHA1 of signedURL followed by the first value of each sorted form parameter.
func twilioOracleSign(t *testing.T, token, signedURL, form string) string {
	t.Helper()
	vals, err := url.ParseQuery(form)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	msg := signedURL
	for _, k := range names {
		msg += k + vals[k][0]
	}
	m := hmac.New(sha1.New, []byte(token))
	m.Write([]byte(msg))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// TestTwilioOracle cross-checks with twilio-go's client.RequestValidator (ValidateBody for
// POSTs). twilio-go has no signer, so direction one computes the signature it recomputes and
// checks it accepts it before our Verify sees it. Nothing is timed.
//
// Known difference (twilio.go): for a repeated POST parameter twilio-go keeps only the first
// value, while we (like twilio-python and twilio-node) sign every de-duplicated, sorted value;
// the agreeing cases below have no repeated names, and the last subtest pins the difference.
func TestTwilioOracle(t *testing.T) {
	t.Parallel()
	p := Twilio()
	jsonSum := sha256.Sum256([]byte(twilioOracleJSON))
	jsonURL := twilioOracleURL + "&bodySHA256=" + hex.EncodeToString(jsonSum[:])
	rv := twilioclient.NewRequestValidator(twilioOracleToken)
	for _, tc := range []struct {
		name      string
		url       string // the URL the request arrives at
		signedURL string // the URL Twilio signed
		body      string
		form      string // the form parameters covered by the signature
	}{
		{"form post", twilioOracleURL, twilioOracleURL, twilioOracleForm, twilioOracleForm},
		{"form post signed with default port", twilioOracleURL, "https://mycompany.com:443/myapp.php?foo=1&bar=2", twilioOracleForm, twilioOracleForm},
		{"form post with port, signed without", "https://mycompany.com:8443/myapp.php?foo=1&bar=2", twilioOracleURL, twilioOracleForm, twilioOracleForm},
		{"json with bodySHA256", jsonURL, jsonURL, twilioOracleJSON, ""},
		{"empty body", twilioOracleURL, twilioOracleURL, "", ""},
	} {
		t.Run("twilio-go accepts, we verify/"+tc.name, func(t *testing.T) {
			sig := twilioOracleSign(t, twilioOracleToken, tc.signedURL, tc.form)
			if !rv.ValidateBody(tc.url, []byte(tc.body), sig) {
				t.Fatal("twilio-go rejects the oracle signature")
			}
			req := &Request{Method: "POST", URL: tc.url, Body: []byte(tc.body), Headers: Headers{{Name: "X-Twilio-Signature", Value: sig}}}
			res, err := p.Verify(req, keysFor(t, p, twilioOracleToken), Params{})
			checkOutcome(t, res, err, 0, "k0", req)
			if tc.body == "" {
				return
			}
			body := []byte(tc.body)
			body[len(body)-2] ^= 1
			tampered := withBody(req, body)
			if rv.ValidateBody(tampered.URL, tampered.Body, sig) {
				t.Fatal("twilio-go accepts a tampered body")
			}
			res, err = p.Verify(tampered, keysFor(t, p, twilioOracleToken), Params{})
			checkOutcome(t, res, err, ReasonSignatureMismatch, "", tampered)
		})
		t.Run("we sign, twilio-go verifies/"+tc.name, func(t *testing.T) {
			s, err := SignDelivery(p, SignInput{Body: []byte(tc.body), URL: tc.url, Method: "POST", EventID: "idem-1"}, []string{twilioOracleToken})
			if err != nil {
				t.Fatal(err)
			}
			sig, _ := s.Headers.Get("X-Twilio-Signature")
			if !rv.ValidateBody(tc.url, s.Body, sig) {
				t.Fatal("twilio-go rejects our delivery")
			}
			if len(s.Body) > 0 && rv.ValidateBody(tc.url, append(append([]byte(nil), s.Body...), 'x'), sig) {
				t.Fatal("twilio-go accepts a tampered body")
			}
			other := twilioclient.NewRequestValidator("another token")
			if other.ValidateBody(tc.url, s.Body, sig) {
				t.Fatal("twilio-go accepts our delivery under another token")
			}
		})
	}
	t.Run("known difference: repeated parameter", func(t *testing.T) {
		body := "To=%2B18005551212&MediaUrl=https%3A%2F%2Fa.example%2F1&MediaUrl=https%3A%2F%2Fa.example%2F2"
		s, err := SignDelivery(p, SignInput{Body: []byte(body), URL: twilioOracleURL, Method: "POST"}, []string{twilioOracleToken})
		if err != nil {
			t.Fatal(err)
		}
		req := &Request{Method: "POST", URL: twilioOracleURL, Headers: s.Headers, Body: s.Body}
		res, err := p.Verify(req, keysFor(t, p, twilioOracleToken), Params{})
		checkOutcome(t, res, err, 0, "k0", req)
		sig, _ := s.Headers.Get("X-Twilio-Signature")
		if rv.ValidateBody(twilioOracleURL, s.Body, sig) {
			t.Fatal("twilio-go now accepts repeated parameters signed with every value: update twilio.go's note")
		}
	})
}
