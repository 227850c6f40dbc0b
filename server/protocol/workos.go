package protocol

import "time"

// WorkOS: WorkOS-Signature is "t=<unix milliseconds>, v1=<hex>", the v1 an HMAC-SHA256 of
// "{t}.{body}" (t exactly as sent) keyed with the endpoint's webhook secret; workos-node
// (src/common/crypto/signature-provider.ts) rejects t older than 180000 ms. The body is the
// event, named by its "id" (event_...).
var workosProvider = timedMACProvider{
	name:      "workos",
	header:    "WorkOS-Signature",
	sep:       ',',
	signSep:   ", ",
	tsKey:     "t",
	sigKey:    "v1",
	join:      ".",
	millis:    true,
	tolerance: 180 * time.Second,
	secret:    sharedSecretParser("WorkOS webhook secret"),
	identity:  jsonBodyIdentity("id"),
}

// WorkOS returns the protocol for WorkOS webhook endpoints.
//
// Verify rejects, in this order: no WorkOS-Signature (missing signature); a value that is
// empty, has an element that is not key=value, no t or two, or a t that is not decimal
// (malformed signature); no v1 (missing signature); no v1 matching a key (malformed signature
// if some v1 was not 64 lowercase hex digits, else signature mismatch); t (milliseconds) more
// than the tolerance from Now in either direction — workos-node checks only the past side
// (timestamp out of tolerance); a body that is not a JSON object (malformed payload); no
// non-empty string "id" (missing event id).
func WorkOS() *Protocol {
	return &Protocol{
		Name:             "workos",
		DisplayName:      "WorkOS",
		SignatureScheme:  `HMAC-SHA256 (hex) of "{t}.{body}", WorkOS-Signature t=<ms>, v1=`,
		SignsTimestamp:   true,
		DefaultTolerance: workosProvider.tolerance,
		IdentitySource:   `body JSON field "id" (event_..., the same on every retry)`,
		DocsURL:          "https://workos.com/docs/events/data-syncing/webhooks",
		Retries: "WorkOS retries a delivery not answered 2xx with exponential back-off for up to " +
			"3 days (6 attempts; WorkOS docs, NOT CONFIRMED from a stored copy), signing each " +
			"attempt when it is sent — the SDK's 180 s check would fail every retry otherwise. " +
			"The default is the SDK's 180 s, applied in both directions.",
		ParseSecret:   workosProvider.secret,
		Verify:        workosProvider.verify,
		Sign:          workosProvider.sign,
		ExampleSecret: exampleSecret("", 25, alnumString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"id":` + jsonQuote(eventID) + `,"event":"dsync.user.created","data":{"id":"directory_user_01FAEAJCR3ZBZ30D8BD1924TVG","object":"directory_user"},"created_at":"2026-01-01T00:00:00.000Z"}`)
		},
	}
}
