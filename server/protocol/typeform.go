package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// Typeform-Signature is "sha256=<base64>", an HMAC-SHA256 of the raw body keyed with the
// secret set on the webhook through the Webhooks API
// (https://www.typeform.com/developers/webhooks/secure-your-webhooks/). The body names the
// delivery's event in "event_id" (a unique ID Typeform assigns; its stability across retries
// is not documented).
var typeformProvider = bodyMACProvider{
	name: "typeform",
	scheme: bodyMACScheme{
		headers: []string{"Typeform-Signature"},
		version: "sha256",
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestBase64,
	},
	secret:   sharedSecretParser("Typeform webhook secret"),
	identity: jsonBodyIdentity("event_id"),
}

// Typeform returns the protocol for Typeform webhooks.
//
// Verify rejects, in this order: no Typeform-Signature (missing signature); an empty value, no
// '=', or a signature that is not 32 bytes of padded standard base64 (malformed signature); a
// prefix other than sha256= (missing signature); no key matching (signature mismatch); a body
// that is not a JSON object (malformed payload); no non-empty string "event_id" (missing
// event id).
func Typeform() *Protocol {
	return &Protocol{
		Name:            "typeform",
		DisplayName:     "Typeform",
		SignatureScheme: "HMAC-SHA256 (base64) of the raw body, Typeform-Signature sha256=",
		IdentitySource: `body JSON field "event_id" (Typeform documents it only as a unique ID it assigns; ` +
			`whether it is kept across attempts is NOT CONFIRMED)`,
		DocsURL: "https://www.typeform.com/developers/webhooks/secure-your-webhooks/",
		Retries: "A delivery not answered 2xx within 30 s is retried: on 429, 408, 503 or 423 every " +
			"2-3 minutes for 10 hours, while 404 or 410 disables the webhook without a retry " +
			"(typeform.com/developers/webhooks, Delivery retries); the schedule for other codes was " +
			"not confirmed. The signature covers only the body, no timestamp, so a retry verifies " +
			"however late it comes. That a retry repeats the event_id was not confirmed from a source.",
		ParseSecret:   typeformProvider.secret,
		Verify:        typeformProvider.verify,
		Sign:          typeformProvider.sign,
		ExampleSecret: exampleSecret("", 24, hex.EncodeToString),
		ExampleBody:   typeformExampleBody,
	}
}

// typeformExampleBody is a form_response delivery with the event id.
func typeformExampleBody(eventID string) []byte {
	return []byte(`{"event_id":` + jsonQuote(eventID) + `,"event_type":"form_response","form_response":{"form_id":"lT4Z3j","token":"a3a12ec67a1365927098a606107fac15","answers":[]}}`)
}
