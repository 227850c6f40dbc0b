package protocol

import (
	"strings"
	"testing"
	"time"
)

// TestEveryProtocolRoundTrips holds every registered protocol to the same minimum: a delivery
// made by its own Sign with an example secret verifies and yields an identity; the same
// delivery with one byte of the body changed, or signed with another secret, does not.
// Provider-specific files test the details against official SDKs and published vectors.
func TestEveryProtocolRoundTrips(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_767_000_000, 0)
	for _, p := range Builtin() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			signing, verifying, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			otherSigning, _, err := p.ExampleSecret()
			if err != nil {
				t.Fatal(err)
			}
			material, err := p.ParseSecret(verifying)
			if err != nil {
				t.Fatalf("ParseSecret(example) = %v", err)
			}
			keys := []Key{{ID: "k1", Material: material}}
			in := SignInput{Body: ExampleBody(p, "evt_conformance_1"), EventID: "evt_conformance_1", Timestamp: now, Method: "POST", URL: "https://hooks.example.com/in?x=1"}
			deliver := func(secret string, mutate func([]byte) []byte) (Result, error) {
				signed, err := SignDelivery(p, in, []string{secret})
				if err != nil {
					t.Fatalf("SignDelivery: %v", err)
				}
				body := signed.Body
				if mutate != nil {
					body = mutate(append([]byte(nil), body...))
				}
				return p.Verify(&Request{Method: in.Method, URL: signed.URL, Headers: signed.Headers, Body: body}, keys, Params{Now: now, Tolerance: 5 * time.Minute})
			}
			res, err := deliver(signing, nil)
			if err != nil {
				t.Fatalf("own signature rejected: %v", err)
			}
			if res.KeyID != "k1" || res.EventID == "" {
				t.Fatalf("result %+v: want key k1 and an event id", res)
			}
			if _, err := deliver(signing, func(b []byte) []byte { return append(b, ' ') }); err == nil && !p.StaticCredential {
				t.Error("a body with a trailing space was accepted")
			}
			if _, err := deliver(otherSigning, nil); err == nil {
				t.Error("a delivery signed with another secret was accepted")
			}
			if _, err := p.Verify(&Request{Method: in.Method, URL: in.URL, Body: in.Body}, keys, Params{Now: now}); ReasonOf(err) == 0 {
				t.Errorf("a delivery without headers gave %v, want a rejection", err)
			}
		})
	}
}

// TestEveryTimestampProtocolRefusesDistantTimes signs deliveries with timestamps far from now,
// up to centuries away, where a time.Sub saturates, and checks that every protocol that signs
// a timestamp refuses them (a signature can be captured and replayed, so the tolerance is part
// of authentication). A protocol may refuse to sign a time its format cannot carry; that time
// is then skipped for it.
func TestEveryTimestampProtocolRefusesDistantTimes(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_767_000_000, 0)
	distant := map[string]time.Time{
		"an hour ahead":      now.Add(time.Hour),
		"an hour ago":        now.Add(-time.Hour),
		"a year ahead":       now.AddDate(1, 0, 0),
		"300 years ahead":    now.AddDate(300, 0, 0),
		"300 years ago":      now.AddDate(-300, 0, 0),
		"year 9999":          time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC),
		"the Unix epoch":     time.Unix(0, 0),
		"before year 1970":   time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		"a second too early": now.Add(-5*time.Minute - time.Second),
		"a second too late":  now.Add(5*time.Minute + time.Second),
	}
	for _, p := range Builtin() {
		if !p.SignsTimestamp {
			continue
		}
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			signing, keys := exampleKeys(t, p)
			signedSome := false
			for name, ts := range distant {
				in := SignInput{Body: ExampleBody(p, "evt_distant"), EventID: "evt_distant", Timestamp: ts, Method: "POST", URL: "https://hooks.example.com/in"}
				signed, err := SignDelivery(p, in, []string{signing})
				if err != nil {
					continue
				}
				signedSome = true
				_, err = p.Verify(&Request{Method: in.Method, URL: signed.URL, Headers: signed.Headers, Body: signed.Body}, keys, Params{Now: now, Tolerance: 5 * time.Minute})
				if reason := ReasonOf(err); reason != ReasonTimestampOutOfTolerance && reason != ReasonMalformedSignature {
					t.Errorf("timestamp %s (%s): got %v, want a timestamp or malformed-signature rejection", name, ts.Format(time.RFC3339), err)
				}
			}
			if !signedSome {
				t.Fatal("signed none of the times")
			}
		})
	}
}

// TestCommerceHostileHeaders: every signature header of the payment and commerce protocols,
// replaced by huge, repetitive or badly encoded values, is rejected with a reason (never
// accepted, never a panic or a bare error), and the rejection quotes none of it.
func TestCommerceHostileHeaders(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 1<<20)
	hex64 := strings.Repeat("0", 64)
	values := []string{
		big,
		strings.Repeat("v1="+hex64+",", 20000) + "t=1700000000",
		"t=1700000000," + strings.Repeat("v1="+hex64+",", 20000),
		"ts=1700000000;" + strings.Repeat("h1="+hex64+";", 20000),
		"1700000000000" + strings.Repeat(","+hex64, 20000),
		strings.Repeat("=", 4096),
		"\x00\xff\xfe" + hex64,
		"t=99999999999999999999,v1=" + hex64,
		strings.Repeat(".", 3) + big,
		"eyJhbGciOiJFUzI1NiJ9." + big + ".AAAA",
	}
	headers := map[string][]string{
		"stripe":            {"Stripe-Signature"},
		"shopify":           {"X-Shopify-Hmac-Sha256"},
		"square":            {"x-square-hmacsha256-signature"},
		"paddle":            {"Paddle-Signature"},
		"checkout":          {"Cko-Signature"},
		"gocardless":        {"Webhook-Signature"},
		"razorpay":          {"X-Razorpay-Signature"},
		"recurly":           {"recurly-signature"},
		"lemonsqueezy":      {"X-Signature"},
		"coinbase-commerce": {"X-CC-Webhook-Signature"},
		"woocommerce":       {"X-WC-Webhook-Signature"},
		"plaid":             {"Plaid-Verification"},
		"xero":              {"x-xero-signature"},
	}
	reg := Default()
	for name, hs := range headers {
		p, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("no protocol %q", name)
		}
		signing, verifying, err := p.ExampleSecret()
		if err != nil {
			t.Fatal(err)
		}
		d, err := SignDelivery(p, SignInput{Body: ExampleBody(p, "evt_hostile"), EventID: "evt_hostile", Timestamp: fixedNow, Method: "POST", URL: "https://hooks.example.com/in"}, []string{signing})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		keys := keysFor(t, p, verifying)
		for _, h := range hs {
			for i, v := range values {
				req := withHeader(&Request{Method: "POST", URL: d.URL, Headers: d.Headers, Body: d.Body}, h, v)
				res, err := p.Verify(req, keys, Params{Now: fixedNow})
				if err == nil {
					t.Errorf("%s: hostile %s value %d accepted: %+v", name, h, i, res)
					continue
				}
				if ReasonOf(err) == 0 {
					t.Errorf("%s: hostile %s value %d: error without a reason: %v", name, h, i, err)
				}
				if len(err.Error()) > 512 {
					t.Errorf("%s: hostile %s value %d: rejection detail of %d bytes", name, h, i, len(err.Error()))
				}
			}
		}
	}
}
