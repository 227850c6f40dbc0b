package protocol

import "crypto/sha1"

// Intercom: X-Hub-Signature is "sha1=<40 hex>", the HMAC-SHA1 of the raw JSON notification
// keyed with the app's client secret (the hub_secret in the v1.0 reference,
// https://developers.intercom.com/intercom-api-reference/v1.0/reference/signed-notifications).
// HMAC-SHA1 is not broken as a MAC. The notification names itself in "id" (notif_...).
var intercomProvider = bodyMACProvider{
	name: "intercom",
	scheme: bodyMACScheme{
		headers: []string{"X-Hub-Signature"},
		version: "sha1",
		newHash: sha1.New,
		size:    sha1.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Intercom client secret"),
	identity: jsonBodyIdentity("id"),
}

// Intercom returns the protocol for Intercom webhook (topic) notifications.
//
// Verify rejects, in this order: no X-Hub-Signature (missing signature); an empty value, no
// '=', or hex that is not 40 lowercase digits (malformed signature); a prefix other than sha1=
// (missing signature); no key matching (signature mismatch); a body that is not a JSON object
// (malformed payload); no non-empty string "id" (missing event id).
func Intercom() *Protocol {
	return &Protocol{
		Name:            "intercom",
		DisplayName:     "Intercom",
		SignatureScheme: "HMAC-SHA1 (hex) of the raw body, X-Hub-Signature sha1=",
		IdentitySource:  `body JSON field "id" (the notification, notif_...)`,
		DocsURL:         "https://developers.intercom.com/docs/webhooks/setting-up-webhooks",
		Retries: "Intercom retries a notification that is not answered 200 within 5 s once, after " +
			"about a minute, and suspends a webhook whose failure rate stays high (Intercom's " +
			"webhook docs; NOT CONFIRMED from the current pages). Only the body is signed, no " +
			"timestamp, so the retry verifies; its id is unchanged.",
		ParseSecret:   intercomProvider.secret,
		Verify:        intercomProvider.verify,
		Sign:          intercomProvider.sign,
		ExampleSecret: exampleSecret("", 16, uuidString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"type":"notification_event","app_id":"ecahpwf5","id":` + jsonQuote(eventID) + `,"topic":"conversation.user.created","data":{"type":"notification_event_data","item":{"type":"conversation","id":"147"}}}`)
		},
	}
}
