package protocol

import (
	"encoding/hex"
	"encoding/json"
	"time"
)

// Calendly-Webhook-Signature is "t=<unix seconds>,v1=<hex>", the v1 an HMAC-SHA256 of
// "{t}.{body}" keyed with the subscription's webhook signing key — Stripe's construction
// (https://developer.calendly.com/docs/webhooks/overview: Verify HMAC-SHA256(key, "<t>." +
// raw_body)). Calendly sends no event or delivery id.
var calendlyProvider = timedMACProvider{
	name:      "calendly",
	header:    "Calendly-Webhook-Signature",
	sep:       ',',
	signSep:   ",",
	tsKey:     "t",
	sigKey:    "v1",
	join:      ".",
	tolerance: 300 * time.Second,
	secret:    sharedSecretParser("Calendly webhook signing key"),
	identity:  bodyHashIdentity,
}

// Calendly returns the protocol for Calendly webhook subscriptions.
//
// Verify rejects, in this order: no Calendly-Webhook-Signature (missing signature); a value
// that is empty, has an element that is not key=value, no t or two, or a t that is not decimal
// seconds (malformed signature); no v1 element (missing signature); no v1 matching a key
// (malformed signature when some v1 was not 64 lowercase hex digits, else signature
// mismatch); t more than the tolerance away from Now either way (timestamp out of tolerance).
// The identity is the body's SHA-256, so it never fails.
func Calendly() *Protocol {
	return &Protocol{
		Name:             "calendly",
		DisplayName:      "Calendly",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{t}.{body}", Calendly-Webhook-Signature v1`,
		SignsTimestamp:   true,
		DefaultTolerance: calendlyProvider.tolerance,
		IdentitySource: "none sent by Calendly; fallback: " + bodyHashPrefix +
			"<hex SHA-256 of the raw body> (a retry carries the same body, so it dedupes)",
		DocsURL: "https://developer.calendly.com/api-docs/overview/webhooks/webhook-signatures",
		Retries: "On a non-2xx answer or a timeout (10 s connect, 15 s read) Calendly retries with " +
			"exponential back-off for 24 hours, then disables the subscription; 410 Gone deletes " +
			"it at once (https://developer.calendly.com/docs/webhooks/overview). Calendly does not " +
			"say whether a retry is signed afresh; t is the signing time as in Stripe's scheme, " +
			"which re-signs every attempt, and the 3-minute window third parties attribute to " +
			"Calendly's guidance would break every retry otherwise, so attempts are taken to be " +
			"re-signed and 300 s (both directions) absorbs clock skew. If retries turn out to " +
			"keep their first t, raise the endpoint tolerance to 24 h: identical bodies dedupe by " +
			"their hash, so a replay inside the window is claimed as a duplicate, never re-run.",
		ParseSecret:   calendlyProvider.secret,
		Verify:        calendlyProvider.verify,
		Sign:          calendlyProvider.sign,
		ExampleSecret: exampleSecret("", 32, hex.EncodeToString),
		ExampleBody:   calendlyExampleBody,
	}
}

// calendlyExampleBody is an invitee.created notification whose invitee URI ends in eventID.
func calendlyExampleBody(eventID string) []byte {
	uri, _ := json.Marshal("https://api.calendly.com/scheduled_events/GBGBDCAADAEDCRZ2/invitees/" + eventID)
	return []byte(`{"created_at":"2026-01-01T00:00:00.000000Z","created_by":"https://api.calendly.com/users/AAAAAAAAAAAAAAAA","event":"invitee.created","payload":{"uri":` + string(uri) + `,"status":"active"}}`)
}
