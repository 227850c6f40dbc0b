package protocol

import (
	"crypto/sha256"
	"encoding/base64"
)

// PagerDuty Webhooks v3: X-PagerDuty-Signature is "v1=<hex>[,v1=<hex>...]", each an
// HMAC-SHA256 of the raw body under one of the subscription's secrets — several while a
// secret is rotated. X-Webhook-Id names the webhook and repeats on every delivery attempt.
// (PagerDuty/developer-docs docs/webhooks/04-Signatures.md and 02-Behavior.md.)
var pagerdutyProvider = bodyMACProvider{
	name: "pagerduty",
	scheme: bodyMACScheme{
		headers: []string{"X-PagerDuty-Signature"},
		version: "v1",
		list:    true,
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("PagerDuty webhook subscription secret"),
	identity: func(req *Request) (string, error) { return headerIdentity(req.Headers, "X-Webhook-Id") },
	extra:    eventIDHeader("pagerduty", "X-Webhook-Id"),
}

// PagerDuty returns the protocol for PagerDuty v3 webhook subscriptions.
//
// Verify rejects, in this order: no X-PagerDuty-Signature (missing signature); an empty value,
// or one whose v1 entries are all malformed (not 64 lowercase hex digits, or without '=')
// (malformed signature); entries of other versions only (missing signature); no v1 entry
// matching any key (malformed signature if one was malformed, else signature mismatch); no or
// empty X-Webhook-Id (missing event id). Spaces around the commas are tolerated (go-pagerduty
// does not trim them; the docs show none).
func PagerDuty() *Protocol {
	return &Protocol{
		Name:            "pagerduty",
		DisplayName:     "PagerDuty",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-PagerDuty-Signature v1= list",
		IdentitySource:  "X-Webhook-Id header (repeated on every delivery attempt)",
		DocsURL:         "https://developer.pagerduty.com/docs/webhooks/webhook-signatures/",
		Retries: "PagerDuty retries on no response within 5 s, 5xx, 429 and connection errors for " +
			"up to 48 hours, queueing later webhooks for the same resource meanwhile; other 4xx " +
			"are dropped without retry, and after 3 consecutive drops the subscription is disabled " +
			"for 24 h (developer-docs 02-Behavior.md). No timestamp is signed, so there is no " +
			"tolerance; X-Webhook-Id is the same on every attempt. During a secret rotation each " +
			"delivery carries one v1 per active secret.",
		ParseSecret:   pagerdutyProvider.secret,
		Verify:        pagerdutyProvider.verify,
		Sign:          pagerdutyProvider.sign,
		ExampleSecret: exampleSecret("", 48, base64.StdEncoding.EncodeToString),
	}
}
