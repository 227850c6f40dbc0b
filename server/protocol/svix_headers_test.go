package protocol

import (
	"strconv"
	"testing"
	"time"

	svix "github.com/svix/svix-webhooks/go"
)

// TestSvixPrefersSvixHeaders: the Svix libraries read svix-id, svix-timestamp and
// svix-signature and fall back to the webhook-* names only when one of those is missing or
// empty. A Svix delivery that also carries a webhook-* set from someone else (a gateway that
// re-signs what it forwards with its own Standard Webhooks key, keeping the original headers)
// verifies in the official library, so it must verify here too, under the svix-id; it was
// judged by the foreign webhook-* set alone and rejected, and Svix dropped it after retries.
func TestSvixPrefersSvixHeaders(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	wh, err := svix.NewWebhook(svixOracleSecret)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(svixOracleID, now, []byte(svixOracleBody))
	if err != nil {
		t.Fatal(err)
	}
	other, err := svix.NewWebhook(svixOracleSecretNew)
	if err != nil {
		t.Fatal(err)
	}
	otherSig, err := other.Sign("msg_gateway", now, []byte(svixOracleBody))
	if err != nil {
		t.Fatal(err)
	}
	req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: []byte(svixOracleBody), Headers: Headers{
		{Name: "webhook-id", Value: "msg_gateway"},
		{Name: "webhook-timestamp", Value: ts},
		{Name: "webhook-signature", Value: otherSig},
		{Name: "svix-id", Value: svixOracleID},
		{Name: "svix-timestamp", Value: ts},
		{Name: "svix-signature", Value: sig},
	}}
	if err := wh.Verify(req.Body, svixOracleHeader(req)); err != nil {
		t.Fatalf("the Svix library rejects the delivery: %v", err)
	}
	params := Params{Now: now, Tolerance: 5 * time.Minute}
	for _, p := range []*Protocol{Svix(), Clerk(), Resend()} {
		res, err := p.Verify(req, keysFor(t, p, svixOracleSecret), params)
		checkOutcome(t, res, err, 0, "k0", req)
		if res.EventID != svixOracleID {
			t.Fatalf("%s: EventID = %q, want the svix-id", p.Name, res.EventID)
		}
	}
	// The Standard Webhooks protocol keeps the spec's names first, as its library reads only them.
	sw := StandardWebhooks()
	res, err := sw.Verify(req, keysFor(t, sw, svixOracleSecretNew), params)
	checkOutcome(t, res, err, 0, "k0", req)
	if res.EventID != "msg_gateway" {
		t.Fatalf("standard-webhooks: EventID = %q, want the webhook-id", res.EventID)
	}
}
