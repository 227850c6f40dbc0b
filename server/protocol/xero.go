package protocol

import (
	"crypto/sha256"
	"encoding/base64"
)

// Xero: x-xero-signature is the base64 HMAC-SHA256 of the raw body keyed with the webhook key
// as UTF-8 bytes — it looks like base64 but is not decoded (XeroAPI/XeroWebhooksReceiver
// Helpers/SignatureVerifier.cs: new HMACSHA256(Encoding.UTF8.GetBytes(key)); XeroAPI/
// xero-php-webhook index.php: base64_encode(hash_hmac('sha256', $raw, $key, true))).
//
// Intent to Receive: when a webhook is set up Xero sends deliveries, some correctly signed and
// some deliberately not, and requires 200 for the former and 401 for the latter within 5 s.
// hookverify answers a rejected delivery with 401, so Intent to Receive passes unaided. The
// correctly signed ones have "events": [] and are claimed like any delivery.
var xeroProvider = bodyMACProvider{
	name: "xero",
	scheme: bodyMACScheme{
		headers: []string{"x-xero-signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestBase64,
	},
	secret:   sharedSecretParser("Xero webhook key"),
	identity: bodyHashIdentity,
}

// Xero returns the protocol for Xero webhooks.
//
// Verify rejects, in this order: no x-xero-signature (missing signature); an empty value or
// one that is not 32 bytes of padded standard base64 (malformed signature); no key matching
// (signature mismatch). The identity is the body's SHA-256, so it never fails.
//
// An accepted or duplicate delivery is answered 200 with no body, and a rejected one 401 with
// none either (BareRejections): Xero lists "There is no body in the response" among what it
// expects of every answer, Intent to Receive included, and retries for 24 hours and then
// disables the webhook when it does not get an acceptable one
// (developer.xero.com/documentation/webhooks/configuring-your-server).
func Xero() *Protocol {
	return &Protocol{
		Name:            "xero",
		DisplayName:     "Xero",
		SuccessReply:    &Reply{Status: 200}, // no body: see Xero's doc comment
		BareRejections:  true,                // its 401s too
		SignatureScheme: "HMAC-SHA256 (base64) of the raw body, x-xero-signature (key used as UTF-8, not decoded)",
		IdentitySource: "none sent by Xero; fallback: " + bodyHashPrefix + "<hex SHA-256 of the raw body> " +
			"(the payload batches events[] with firstEventSequence/lastEventSequence and a random " +
			"entropy field, so distinct payloads never collide and a resent payload dedupes)",
		DocsURL: "https://developer.xero.com/documentation/guides/webhooks/configuring-your-server/",
		Retries: "Xero expects a 200 with no body within 5 s; otherwise it retries with decreasing " +
			"frequency for up to 24 hours, then disables the webhook (developer.xero.com/documentation/" +
			"webhooks/configuring-your-server). Intent to Receive needs 401 for its deliberately " +
			"mis-signed deliveries, which is what a rejection gets. Only the body is signed, no " +
			"timestamp, so late retries verify.",
		ParseSecret:   xeroProvider.secret,
		Verify:        xeroProvider.verify,
		Sign:          xeroProvider.sign,
		ExampleSecret: exampleSecret("", 48, base64.StdEncoding.EncodeToString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"events":[{"resourceUrl":"https://api.xero.com/api.xro/2.0/Contacts/717f2bfc-c6d4-41fd-b238-3f2f0c0cf777","resourceId":"717f2bfc-c6d4-41fd-b238-3f2f0c0cf777","eventDateUtc":"2026-01-01T00:00:00.000","eventType":"UPDATE","eventCategory":"CONTACT","tenantId":"c2cc9b6e-9458-4c7d-93cc-f02b81b0594f","tenantType":"ORGANISATION"}],"firstEventSequence":1,"lastEventSequence":1,"entropy":` + jsonQuote(eventID) + `}`)
		},
	}
}
