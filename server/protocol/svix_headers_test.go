package protocol

import (
	"fmt"
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

// TestSvixHeaderSetsAsTheLibrary: the Svix Go library (webhook.go, verify) takes the svix-*
// set only when svix-id, svix-signature and svix-timestamp are all present and non-empty, and
// otherwise the webhook-* set. Every combination of each of the six headers present, absent
// or empty, with either set signed by the endpoint's secret or by another, must be accepted
// here exactly when the library accepts it, under the id of the set the library read. A svix-*
// set with one header missing or empty beside a complete webhook-* set was judged here by the
// incomplete svix-* set (missing timestamp, missing event id, malformed signature) and
// rejected, where the library verifies the webhook-* set.
func TestSvixHeaderSetsAsTheLibrary(t *testing.T) {
	t.Parallel()
	now := time.Now()
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(svixOracleBody)
	sign := func(secret, id string) string {
		wh, err := svix.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := wh.Sign(id, now, body)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	wh, err := svix.NewWebhook(svixOracleSecret)
	if err != nil {
		t.Fatal(err)
	}
	const svixID, specID = "msg_svix_set", "msg_webhook_set"
	params := Params{Now: now, Tolerance: 5 * time.Minute}
	protocols := []*Protocol{Svix(), Clerk(), Resend()}
	keys := make([][]Key, len(protocols))
	for i, p := range protocols {
		keys[i] = keysFor(t, p, svixOracleSecret)
	}
	names := [6]string{"svix-id", "svix-timestamp", "svix-signature", "webhook-id", "webhook-timestamp", "webhook-signature"}
	for _, signers := range [][2]string{{svixOracleSecret, svixOracleSecret}, {svixOracleSecret, svixOracleSecretNew}, {svixOracleSecretNew, svixOracleSecret}} {
		values := [6]string{svixID, ts, sign(signers[0], svixID), specID, ts, sign(signers[1], specID)}
		// Each header: 0 present, 1 absent, 2 empty.
		for combo := range 729 {
			req := &Request{Method: "POST", URL: "https://hooks.example.com/x", Body: body}
			var desc string
			c := combo
			for i, name := range names {
				switch c % 3 {
				case 0:
					req.Headers = append(req.Headers, Header{Name: name, Value: values[i]})
				case 1:
					desc += " no " + name
				case 2:
					req.Headers = append(req.Headers, Header{Name: name, Value: ""})
					desc += " empty " + name
				}
				c /= 3
			}
			desc = fmt.Sprintf("signers %v:%s", signers == [2]string{svixOracleSecret, svixOracleSecret}, desc)
			libErr := wh.Verify(body, svixOracleHeader(req))
			wantID := specID
			if combo%27 == 0 { // the three svix-* headers present and non-empty
				wantID = svixID
			}
			for i, p := range protocols {
				res, err := p.Verify(req, keys[i], params)
				switch {
				case libErr == nil && err != nil:
					t.Fatalf("%s:%s: the library accepts, rejected here: %v", p.Name, desc, err)
				case libErr != nil && err == nil:
					t.Fatalf("%s:%s: the library rejects (%v), accepted here", p.Name, desc, libErr)
				case err == nil && res.EventID != wantID:
					t.Fatalf("%s:%s: EventID %q, want %q, the id of the set the library verified", p.Name, desc, res.EventID, wantID)
				}
				checkAnswer(t, err)
			}
		}
	}
}
