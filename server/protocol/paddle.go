package protocol

import (
	"encoding/hex"
	"time"
)

// Paddle Billing: Paddle-Signature is "ts=<unix seconds>;h1=<hex>", the h1 an HMAC-SHA256 of
// "{ts}:{body}" keyed with the notification destination's secret key (pdl_ntfset_..., used as
// a string) (https://developer.paddle.com/webhooks/signature-verification; paddle-go-sdk
// webhook_verifier.go). The body names the event in "event_id" (evt_...) and the delivery in
// "notification_id" (ntf_...). Not Paddle Classic, whose p_signature is RSA over form fields.
var paddleProvider = timedMACProvider{
	name:      "paddle",
	header:    "Paddle-Signature",
	sep:       ';',
	signSep:   ";",
	tsKey:     "ts",
	sigKey:    "h1",
	join:      ":",
	tolerance: 300 * time.Second,
	secret:    sharedSecretParser("Paddle notification destination secret key"),
	identity:  jsonBodyIdentity("event_id"),
}

// Paddle returns the protocol for Paddle Billing notification destinations (webhooks).
//
// Verify rejects, in this order: no Paddle-Signature (missing signature); a value that is
// empty, has an element that is not key=value, no ts or two, or a ts that is not decimal
// seconds (malformed signature); no h1 (missing signature; h2 and other schemes are ignored);
// no h1 matching a key — any of several h1 may match, as paddle-node-sdk's multi-hash test
// expects, where paddle-go-sdk refuses more than one (malformed signature when some h1 was
// not 64 lowercase hex digits, else signature mismatch); ts more than the tolerance away from
// Now in either direction (timestamp out of tolerance); a body that is not a JSON object
// (malformed payload); no non-empty string "event_id" (missing event id).
func Paddle() *Protocol {
	return &Protocol{
		Name:             "paddle",
		DisplayName:      "Paddle Billing",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{ts}:{body}", Paddle-Signature ts=;h1=`,
		SignsTimestamp:   true,
		DefaultTolerance: paddleProvider.tolerance,
		IdentitySource:   `body JSON field "event_id" (evt_...; the same on retries and replays, unlike a replay's notification_id)`,
		DocsURL:          "https://developer.paddle.com/webhooks/signature-verification",
		Retries: "Paddle retries a notification not answered 2xx within 5 s with exponential " +
			"back-off (live: up to 60 times over 3 days; sandbox: 3 times within 15 minutes), and " +
			"each attempt is signed when it is sent — its SDK helpers enforce a 5 s tolerance, " +
			"which would fail every retry otherwise. The 300 s default (both directions) is wider " +
			"than the SDKs' 5 s to absorb clock skew; a replayed delivery inside it is claimed as a " +
			"duplicate by its event_id.",
		ParseSecret:   paddleProvider.secret,
		Verify:        paddleProvider.verify,
		Sign:          paddleProvider.sign,
		ExampleSecret: exampleSecret("pdl_ntfset_", 24, hex.EncodeToString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"data":{"id":"pri_01hsdn96k2hxjzsq5yerecdj9j","status":"active"},"event_id":` + jsonQuote(eventID) + `,"event_type":"price.created","occurred_at":"2026-01-01T00:00:00.000000Z","notification_id":"ntf_01hsdn977e920kbgzt6r6c9rqc"}`)
		},
	}
}
