package protocol

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"testing"
	"time"

	svix "github.com/svix/svix-webhooks/go"
)

const (
	svixOracleSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	svixOracleSecretNew = "whsec_bmV3ZXIgc2VjcmV0IGZvciByb3RhdGlvbiB0ZXN0cw=="
	svixOracleID        = "msg_2ORACLEp5jXN8AQM9LWM0D4lo"
	svixOracleBody      = `{"type":"user.created","data":{"id":"user_1"}}`
)

func svixOracleHeader(req *Request) http.Header {
	hdr := http.Header{}
	for _, h := range req.Headers {
		hdr.Add(h.Name, h.Value)
	}
	return hdr
}

// TestSvixOracle cross-checks svix, clerk and resend (all Svix deliveries) with the official
// svix-webhooks Go library in both directions. Its Verify reads the real clock, so deliveries
// are signed at time.Now() and our Params.Now is the same instant.
func TestSvixOracle(t *testing.T) {
	t.Parallel()
	now := time.Now()
	params := Params{Now: now, Tolerance: 5 * time.Minute}
	for _, p := range []*Protocol{Svix(), Clerk(), Resend()} {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			t.Run("library signs, we verify", func(t *testing.T) {
				for _, secret := range []string{svixOracleSecret, svixOracleSecretNew} {
					wh, err := svix.NewWebhook(secret)
					if err != nil {
						t.Fatal(err)
					}
					sig, err := wh.Sign(svixOracleID, now, []byte(svixOracleBody))
					if err != nil {
						t.Fatal(err)
					}
					req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: []byte(svixOracleBody), Headers: Headers{
						{Name: "svix-id", Value: svixOracleID},
						{Name: "svix-timestamp", Value: strconv.FormatInt(now.Unix(), 10)},
						{Name: "svix-signature", Value: sig},
					}}
					if err := wh.Verify(req.Body, svixOracleHeader(req)); err != nil {
						t.Fatalf("library rejects its own delivery: %v", err)
					}
					res, err := p.Verify(req, keysFor(t, p, secret), params)
					checkOutcome(t, res, err, 0, "k0", req)
					if res.EventID != svixOracleID {
						t.Fatalf("EventID = %q", res.EventID)
					}
					body := []byte(svixOracleBody)
					body[len(body)-2] ^= 1
					tampered := withBody(req, body)
					res, err = p.Verify(tampered, keysFor(t, p, secret), params)
					checkOutcome(t, res, err, ReasonSignatureMismatch, "", tampered)
				}
			})
			t.Run("we sign with two secrets, library verifies with each", func(t *testing.T) {
				s, err := SignDelivery(p, SignInput{Body: []byte(svixOracleBody), EventID: svixOracleID, Timestamp: now}, []string{svixOracleSecret, svixOracleSecretNew})
				if err != nil {
					t.Fatal(err)
				}
				hdr := svixOracleHeader(&Request{Headers: s.Headers})
				for _, secret := range []string{svixOracleSecret, svixOracleSecretNew} {
					wh, err := svix.NewWebhook(secret)
					if err != nil {
						t.Fatal(err)
					}
					if err := wh.Verify(s.Body, hdr); err != nil {
						t.Fatalf("library rejects our delivery: %v", err)
					}
					if err := wh.Verify(append(append([]byte(nil), s.Body...), ' '), hdr); err == nil {
						t.Fatal("library accepts a tampered body")
					}
				}
				other, _ := svix.NewWebhook("whsec_" + base64.StdEncoding.EncodeToString([]byte("someone else's key 24by")))
				if err := other.Verify(s.Body, hdr); err == nil {
					t.Fatal("library accepts our delivery under another key")
				}
			})
		})
	}
}
