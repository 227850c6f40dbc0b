package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// Lemon Squeezy: X-Signature is the hex HMAC-SHA256 of the raw body keyed with the signing
// secret chosen for the webhook (https://docs.lemonsqueezy.com/help/webhooks/signing-requests);
// X-Event-Name repeats meta.event_name. The body ({"meta":{...},"data":{...}}) names the
// resource, not the event or the delivery.
var lemonsqueezyProvider = bodyMACProvider{
	name: "lemonsqueezy",
	scheme: bodyMACScheme{
		headers: []string{"X-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Lemon Squeezy webhook signing secret"),
	identity: bodyHashIdentity,
}

// LemonSqueezy returns the protocol for Lemon Squeezy webhooks.
//
// Verify rejects, in this order: no X-Signature (missing signature); an empty value or not
// 64 lowercase hex digits (malformed signature); no key matching (signature mismatch). The
// identity is the body's SHA-256, so it never fails.
func LemonSqueezy() *Protocol {
	return &Protocol{
		Name:            "lemonsqueezy",
		DisplayName:     "Lemon Squeezy",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Signature",
		IdentitySource: "none sent by Lemon Squeezy (data.id names the resource, which many events share); " +
			"fallback: " + bodyHashPrefix + "<hex SHA-256 of the raw body>",
		DocsURL: "https://docs.lemonsqueezy.com/help/webhooks/signing-requests",
		Retries: "Lemon Squeezy resends a webhook that is not answered 200 up to three more times " +
			"with exponential back-off (about 5 s, 25 s and 125 s; help/webhooks, NOT CONFIRMED " +
			"from a stored copy). A retry carries the same body and signature — nothing is timed — " +
			"so it verifies and dedupes by the body hash.",
		ParseSecret:   lemonsqueezyProvider.secret,
		Verify:        lemonsqueezyProvider.verify,
		Sign:          lemonsqueezyProvider.sign,
		ExampleSecret: exampleSecret("", 16, hex.EncodeToString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"meta":{"event_name":"order_created","custom_data":{"ref":` + jsonQuote(eventID) + `}},"data":{"type":"orders","id":"1","attributes":{"status":"paid"}}}`)
		},
	}
}
