package protocol

import (
	"errors"
	"testing"
	"time"
)

// In the X-Shopify-Event-Id fallback, X-Shopify-Topic is read before Shopify-Topic, as the
// webhook id is: a delivery carrying both spellings keeps the identity it has with the X- one
// alone, so its retries stay duplicates whichever extra header a proxy adds.
func TestShopifyEventIDFallbackPrefersXShopifyTopic(t *testing.T) {
	t.Parallel()
	p := Shopify()
	keys := keysFor(t, p, shopifySecret)
	xOnly := shopifyEventIDOnly(t, shopifyBody, "X-Shopify-Topic", "orders/create")
	both := withHeader(xOnly, "Shopify-Topic", "orders/updated")
	want := shopifyEventID + ":orders/create:" + bodySHA256ID([]byte(shopifyBody))
	if got := eventIDOf(t, p, keys, xOnly, fixedNow); got != want {
		t.Fatalf("X-Shopify-Topic only: EventID = %q, want %q", got, want)
	}
	if got := eventIDOf(t, p, keys, both, fixedNow); got != want {
		t.Fatalf("both topic headers: EventID = %q, want %q (X-Shopify-Topic first)", got, want)
	}
}

// X-Shopify-Hmac-Sha256 is judged before Shopify-Hmac-Sha256: with both present and non-empty,
// the X- one alone decides, whatever the other carries.
func TestShopifyXHmacHeaderJudgedFirst(t *testing.T) {
	t.Parallel()
	p := Shopify()
	keys := keysFor(t, p, shopifySecret)
	good := signed(t, p, SignInput{Body: []byte(shopifyBody), EventID: shopifyEventID, Timestamp: fixedNow}, shopifySecret)
	sig := header(good, "X-Shopify-Hmac-Sha256")
	wrong := hmacSHA256Base64(shopifySecretNew, shopifyBody)

	req := withHeader(good, "Shopify-Hmac-Sha256", "garbage")
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)

	req = withHeader(withHeader(good, "X-Shopify-Hmac-Sha256", wrong), "Shopify-Hmac-Sha256", sig)
	res, err = p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
}

// Sign refuses an empty event id (X-Shopify-Webhook-Id is the identity), and sends
// X-Shopify-Triggered-At, in UTC RFC 3339, when given a timestamp.
func TestShopifySignHeaders(t *testing.T) {
	t.Parallel()
	p := Shopify()
	if _, err := p.Sign(SignInput{Body: []byte(shopifyBody), Timestamp: fixedNow}, []string{shopifySecret}); !errors.Is(err, ErrSignNeedsEventID) {
		t.Fatalf("Sign without an event id: err = %v, want ErrSignNeedsEventID", err)
	}
	at := time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.FixedZone("X", 3600))
	h, err := p.Sign(SignInput{Body: []byte(shopifyBody), EventID: shopifyEventID, Timestamp: at}, []string{shopifySecret})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := header(&Request{Headers: h}, "X-Shopify-Triggered-At"), "2026-03-04T04:06:07.89Z"; got != want {
		t.Fatalf("X-Shopify-Triggered-At = %q, want %q", got, want)
	}
	if got := header(&Request{Headers: h}, "X-Shopify-Webhook-Id"); got != shopifyEventID {
		t.Fatalf("X-Shopify-Webhook-Id = %q, want %q", got, shopifyEventID)
	}
}
