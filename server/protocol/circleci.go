package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// CircleCI outbound webhooks: circleci-signature is "v1=<hex>", the HMAC-SHA256 of the raw
// body keyed with the webhook's secret; the header is a comma-separated list so that other
// versions can be added, and only v1 is checked
// (https://circleci.com/docs/webhooks/#validate-webhooks). The body's "id" names the event:
// "ID of the webhook event ... can be used for idempotency".
var circleciProvider = bodyMACProvider{
	name: "circleci",
	scheme: bodyMACScheme{
		headers: []string{"circleci-signature"},
		version: "v1",
		list:    true,
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("CircleCI webhook secret"),
	identity: jsonBodyIdentity("id"),
}

// CircleCI returns the protocol for CircleCI project webhooks.
//
// Verify rejects, in this order: no circleci-signature (missing signature); an empty value or
// one whose v1 entries are all malformed (malformed signature); entries of other versions
// only (missing signature); no v1 matching a key (malformed signature if one was malformed,
// else signature mismatch); a body that is not a JSON object (malformed payload); no non-empty
// string "id" (missing event id).
func CircleCI() *Protocol {
	return &Protocol{
		Name:            "circleci",
		DisplayName:     "CircleCI",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, circleci-signature v1= list",
		IdentitySource:  `body JSON field "id" (the webhook event's id, meant for idempotency)`,
		DocsURL:         "https://circleci.com/docs/webhooks/",
		Retries: "CircleCI sends each event at least once and may send it again (hence the id for " +
			"idempotency); its retry schedule is not documented (NOT CONFIRMED). Only the body is " +
			"signed, no timestamp, so a late resend still verifies and dedupes by id.",
		ParseSecret:   circleciProvider.secret,
		Verify:        circleciProvider.verify,
		Sign:          circleciProvider.sign,
		ExampleSecret: exampleSecret("", 20, hex.EncodeToString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"type":"workflow-completed","id":` + jsonQuote(eventID) + `,"happened_at":"2026-01-01T00:00:00.000Z","webhook":{"id":"cf8c4fdd-0587-4da1-b4ca-4846e9640af9","name":"Sample Webhook"},"workflow":{"id":"fda08377-fe7e-46b1-8992-3a7aaecac9c3","status":"success"}}`)
		},
	}
}
