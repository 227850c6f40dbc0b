package protocol

import (
	"strings"
	"testing"
	"time"
)

// TestWooCommerceSameSecondDeliveriesAreDistinct: WooCommerce's X-WC-Webhook-Delivery-ID is
// wp_hash(webhook id . strtotime('now')) (WC_Webhook::get_new_delivery_id, woocommerce/woocommerce
// plugins/woocommerce/includes/class-wc-webhook.php), so every delivery one webhook makes within
// the same second carries the same id. Two different events in that second (two orders updated
// by one bulk action) must not be taken for one: the second would be answered DUPLICATE and lost.
// A re-forward of the same delivery (same id, same body) must still be one event.
func TestWooCommerceSameSecondDeliveriesAreDistinct(t *testing.T) {
	t.Parallel()
	p := WooCommerce()
	keys := keysFor(t, p, woocommerceSecret)
	const sameSecond = "5d41402abc4b2a76b9719d911017c592"
	a := signed(t, p, SignInput{Body: []byte(`{"id":727,"status":"processing"}`), EventID: sameSecond}, woocommerceSecret)
	b := signed(t, p, SignInput{Body: []byte(`{"id":728,"status":"processing"}`), EventID: sameSecond}, woocommerceSecret)
	ra, err := p.Verify(a, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	rb, err := p.Verify(b, keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if ra.EventID == rb.EventID {
		t.Fatalf("two different events sent in one second share the identity %q", ra.EventID)
	}
	again, err := p.Verify(signed(t, p, SignInput{Body: a.Body, EventID: sameSecond}, woocommerceSecret), keys, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if again.EventID != ra.EventID {
		t.Fatalf("the same delivery forwarded twice has identities %q and %q", ra.EventID, again.EventID)
	}
}

// TestPlaidRepeatedNotificationsAreDistinct: Plaid fires SYNC_UPDATES_AVAILABLE whenever an
// Item's transactions change, and its body (environment, item_id, webhook_type, webhook_code and
// the two completion flags; SyncUpdatesAvailableWebhook in Plaid's clients) is the same every
// time once the history is loaded. Keyed on the body alone, every later update inside the dedupe
// window would be answered DUPLICATE and the app would never sync again. The signed iat tells
// them apart; the same token forwarded twice stays one event.
func TestPlaidRepeatedNotificationsAreDistinct(t *testing.T) {
	t.Parallel()
	p := Plaid()
	keys := keysFor(t, p, plaidTestPublic)
	body := `{"environment":"production","historical_update_complete":true,"initial_update_complete":true,"item_id":"DWVAAPWq4RHGlEaNyGKRTAnPLaEmo8Cvq7na6","webhook_code":"SYNC_UPDATES_AVAILABLE","webhook_type":"TRANSACTIONS"}`
	first := fixedNow
	later := fixedNow.Add(6 * time.Hour)
	tokFirst := plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(first.Unix(), body))
	tokLater := plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(later.Unix(), body))
	r1, err := p.Verify(plaidRequest(tokFirst, body), keys, Params{Now: first})
	if err != nil {
		t.Fatal(err)
	}
	r2, err := p.Verify(plaidRequest(tokLater, body), keys, Params{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if r1.EventID == r2.EventID {
		t.Fatalf("two SYNC_UPDATES_AVAILABLE notifications six hours apart share the identity %q", r1.EventID)
	}
	again, err := p.Verify(plaidRequest(tokFirst, body), keys, Params{Now: first.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if again.EventID != r1.EventID {
		t.Fatalf("one delivery forwarded twice has identities %q and %q", r1.EventID, again.EventID)
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
