package protocol

import "crypto/sha256"

// Coinbase Commerce: X-CC-Webhook-Signature is the hex HMAC-SHA256 of the raw body keyed with
// the endpoint's shared secret (coinbase/coinbase-commerce-node lib/Webhook.js). The body is
// {id, scheduled_for, attempt_number, event: {id, type, ...}}: the outer id names the
// delivery record and attempt_number grows on retries, event.id names the event.
var coinbaseCommerceProvider = bodyMACProvider{
	name: "coinbase-commerce",
	scheme: bodyMACScheme{
		headers: []string{"X-CC-Webhook-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Coinbase Commerce webhook shared secret"),
	identity: jsonBodyIdentity("event", "id"),
}

// CoinbaseCommerce returns the protocol for Coinbase Commerce webhooks.
//
// Verify rejects, in this order: no X-CC-Webhook-Signature (missing signature); an empty value
// or not 64 lowercase hex digits (malformed signature); no key matching (signature mismatch);
// a body that is not a JSON object (malformed payload); no "event" object with a non-empty
// string "id" (missing event id) — the SDK's verifyEventBody likewise requires "event".
func CoinbaseCommerce() *Protocol {
	return &Protocol{
		Name:            "coinbase-commerce",
		DisplayName:     "Coinbase Commerce",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-CC-Webhook-Signature",
		IdentitySource:  `body JSON field "event.id" (the event; the outer "id" is the delivery record)`,
		DocsURL:         "https://github.com/coinbase/coinbase-commerce-node#webhooks",
		Retries: "Coinbase Commerce retries failed deliveries with exponential back-off (attempt_number " +
			"in the body counts them; the schedule was not confirmed). Only the body is signed, no " +
			"timestamp, so late retries verify; event.id is the same on every attempt while " +
			"attempt_number changes, so the body hash would not dedupe.",
		ParseSecret:   coinbaseCommerceProvider.secret,
		Verify:        coinbaseCommerceProvider.verify,
		Sign:          coinbaseCommerceProvider.sign,
		ExampleSecret: exampleSecret("", 16, uuidString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"id":1,"scheduled_for":"2026-01-01T00:00:00Z","attempt_number":1,"event":{"id":` + jsonQuote(eventID) + `,"type":"charge:created","api_version":"2018-03-22","created_at":"2026-01-01T00:00:00Z","data":{"code":"66BEOV2A"}}}`)
		},
	}
}
