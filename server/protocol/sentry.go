package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// Sentry integration-platform webhooks: Sentry-Hook-Signature is the hex HMAC-SHA256 of the
// raw body keyed with the integration's Client Secret; Sentry-Hook-Timestamp is sent but not
// signed. The official example also reads the older Sentry-App-Signature name
// (getsentry/integration-platform-example backend-py/src/api/middleware/verify_sentry_signature.py).
// Sentry sends an empty body with some requests; its HMAC is that of the empty string.
var sentryProvider = bodyMACProvider{
	name: "sentry",
	scheme: bodyMACScheme{
		headers: []string{"Sentry-Hook-Signature", "Sentry-App-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Sentry integration client secret"),
	identity: func(req *Request) (string, error) { return headerIdentity(req.Headers, "Request-ID") },
	extra:    eventIDHeader("sentry", "Request-ID"),
}

// Sentry returns the protocol for Sentry integration-platform (internal and public
// integration) webhooks.
//
// Verify rejects, in this order: neither Sentry-Hook-Signature nor Sentry-App-Signature
// (missing signature); the chosen one empty or not 64 lowercase hex digits (malformed
// signature); no key matching (signature mismatch); no or empty Request-ID (missing event id).
func Sentry() *Protocol {
	return &Protocol{
		Name:            "sentry",
		DisplayName:     "Sentry",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, Sentry-Hook-Signature",
		IdentitySource:  "Request-ID header (Sentry's unique id of the webhook request)",
		DocsURL:         "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/",
		Retries: "Sentry's retry behaviour for integration webhooks is not documented (NOT " +
			"CONFIRMED). Nothing time-bound is signed (Sentry-Hook-Timestamp is outside the HMAC), " +
			"so a late retry still verifies; whether Request-ID repeats on a retry is unconfirmed.",
		ParseSecret:   sentryProvider.secret,
		Verify:        sentryProvider.verify,
		Sign:          sentryProvider.sign,
		ExampleSecret: exampleSecret("", 32, hex.EncodeToString),
	}
}
