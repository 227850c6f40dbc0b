package protocol

import "testing"

// Shopify Events (https://shopify.dev/docs/apps/build/events/verify-deliveries), which Shopify
// says "will become the primary subscription mechanism" and is configured "alongside" webhooks
// in the same shopify.app.toml, signs exactly as webhooks do — "a base64-encoded HMAC signature
// in the Shopify-Hmac-Sha256 header, generated using your app's client secret and the raw
// request body" — but names its headers without the X- prefix, and has deliveries deduplicated
// "using Shopify-Webhook-Id". An app's Events deliveries must verify on its Shopify endpoint.
func TestShopifyEventsHeaders(t *testing.T) {
	t.Parallel()
	p := Shopify()
	sig := hmacSHA256Base64(shopifySecret, shopifyBody)
	events := &Request{Method: "POST", URL: "https://hooks.example.com/shopify", Body: []byte(shopifyBody), Headers: Headers{
		{Name: "Shopify-Hmac-Sha256", Value: sig},
		{Name: "Shopify-Webhook-Id", Value: shopifyEventID},
		{Name: "Shopify-Topic", Value: "Product"},
	}}
	tests := []struct {
		name       string
		req        *Request
		keys       []string
		wantReason Reason
		wantKey    string
		wantEvent  string
	}{
		{name: "Events delivery accepted", req: events, keys: []string{shopifySecret}, wantKey: "k0", wantEvent: shopifyEventID},
		{name: "Events delivery, rotated secrets", req: events, keys: []string{shopifySecretNew, shopifySecret}, wantKey: "k1", wantEvent: shopifyEventID},
		{name: "Events delivery, wrong secret", req: events, keys: []string{shopifySecretNew}, wantReason: ReasonSignatureMismatch},
		{name: "Events delivery, body tampered", req: withBody(events, []byte(shopifyBody+" ")), keys: []string{shopifySecret}, wantReason: ReasonSignatureMismatch},
		{name: "Events delivery, malformed signature", req: withHeader(events, "Shopify-Hmac-Sha256", "garbage"), keys: []string{shopifySecret}, wantReason: ReasonMalformedSignature},
		{name: "Events delivery without Shopify-Webhook-Id", req: withoutHeader(events, "Shopify-Webhook-Id"), keys: []string{shopifySecret}, wantReason: ReasonMissingEventID},
		{name: "webhook delivery's X-Shopify-Webhook-Id still first", req: withHeader(events, "X-Shopify-Webhook-Id", "wh-1"), keys: []string{shopifySecret}, wantKey: "k0", wantEvent: "wh-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := p.Verify(tc.req, keysFor(t, p, tc.keys...), Params{Now: fixedNow})
			checkOutcome(t, res, err, tc.wantReason, tc.wantKey, tc.req)
			if err == nil && res.EventID != tc.wantEvent {
				t.Fatalf("EventID = %q, want %q", res.EventID, tc.wantEvent)
			}
		})
	}
}
