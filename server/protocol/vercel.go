package protocol

import "crypto/sha1"

// Vercel account (team) webhooks and integration webhooks: x-vercel-signature is the
// lowercase hex HMAC-SHA1 of the raw body, with no prefix, keyed with the webhook's secret
// (shown once, when it is created) or, for an integration's webhooks, the integration's Client
// Secret ("the sha1 of the payload body using your client secret", vercel.com/docs/webhooks,
// "Securing webhooks"; vercel/example-marketplace-integration app/webhook/route.ts computes
// createHmac("sha1", INTEGRATION_CLIENT_SECRET) over the raw body and compares the hex digest).
// Nothing else is signed. The body is a JSON object whose top-level "id" names the event
// (Webhooks API reference: "The ID of the webhook delivery"; type, createdAt, region and
// payload beside it). HMAC-SHA1 is not broken as a MAC.
var vercelProvider = bodyMACProvider{
	name: "vercel",
	scheme: bodyMACScheme{
		headers: []string{"x-vercel-signature"},
		newHash: sha1.New,
		size:    sha1.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Vercel webhook secret or integration Client Secret"),
	identity: jsonBodyIdentity("id"),
}

// Vercel returns the protocol for Vercel account webhooks and integration webhooks.
//
// Verify rejects, in this order: no x-vercel-signature (missing signature); an empty value or
// one that is not 40 lowercase hex digits (malformed signature); no key matching (signature
// mismatch); a body that is not a JSON object (malformed payload); no non-empty string
// top-level "id" (missing event id).
func Vercel() *Protocol {
	return &Protocol{
		Name:            "vercel",
		DisplayName:     "Vercel",
		SignatureScheme: "HMAC-SHA1 (hex) of the raw body, x-vercel-signature",
		IdentitySource:  `body JSON field "id" (top level; Vercel's "ID of the webhook delivery", beside type and createdAt)`,
		DocsURL:         "https://vercel.com/docs/webhooks/webhooks-api#securing-webhooks",
		Retries: "Vercel's webhook docs say nothing of retries: whether it resends a delivery not " +
			"answered 2xx, on what schedule, and whether a resend keeps the body's \"id\" are NOT " +
			"CONFIRMED. Only the body is signed, no timestamp, so a late resend of the same body " +
			"still verifies and dedupes by its id; a resend under a new id would be a new event.",
		ParseSecret:   vercelProvider.secret,
		Verify:        vercelProvider.verify,
		Sign:          vercelProvider.sign,
		ExampleSecret: exampleSecret("", 24, alnumString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"id":` + jsonQuote(eventID) + `,"type":"deployment.created","createdAt":1767225600000,"region":"iad1","payload":{"team":{"id":"team_1a2b3c"},"user":{"id":"usr_9z8y7x"},"deployment":{"id":"dpl_2mG7hT5yK1","meta":{},"url":"example-abc123.vercel.app","name":"example"},"links":{"deployment":"https://vercel.com/acme/example/2mG7hT5yK1","project":"https://vercel.com/acme/example"},"target":"production","project":{"id":"prj_4xQ8wE"},"plan":"pro","regions":["iad1"]}}`)
		},
	}
}
