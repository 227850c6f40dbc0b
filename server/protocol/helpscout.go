package protocol

import (
	"crypto/sha1"
	"encoding/json"
)

// Help Scout signs the raw body with HMAC-SHA1 keyed with the webhook's secret key and sends the
// padded base64 digest in X-HelpScout-Signature; X-HelpScout-Event names the event. There is no
// timestamp. Sources: https://developer.helpscout.com/webhooks/ and helpscout/helpscout-api-php
// (src/Webhooks/IncomingWebhook.php and its webhook example, whose vector is tested here).
const (
	helpscoutName            = "helpscout"
	helpscoutSignatureHeader = "X-HelpScout-Signature"
)

var (
	helpscoutMAC         = bodyMAC{header: helpscoutSignatureHeader, prefix: "", newHash: sha1.New, size: sha1.Size, encoding: digestBase64}
	parseHelpScoutSecret = sharedSecretParser("Help Scout webhook secret key")
)

// HelpScout returns the protocol for Help Scout webhooks.
//
// Verify rejects, in this order: no X-HelpScout-Signature (missing signature); a value that is
// not 20 bytes of canonical padded base64 (malformed signature); no key matching (signature
// mismatch). The identity is the body's hash, so it is never missing.
func HelpScout() *Protocol {
	return &Protocol{
		Name:            helpscoutName,
		DisplayName:     "Help Scout",
		SignatureScheme: "HMAC-SHA1 (base64) of the raw body, X-HelpScout-Signature",
		IdentitySource:  "sha256 of the raw body (\"body-sha256:<hex>\"): Help Scout sends no event id (the body is the conversation or customer object, and its \"id\" is the resource's, shared by every event about it)",
		DocsURL:         "https://developer.helpscout.com/webhooks/",
		Retries: "Help Scout retries a delivery that is not answered 2xx, with backoff, and deactivates a " +
			"webhook after repeated failures (the exact schedule is not documented in the sources " +
			"read). A retry resends the same body, and no timestamp is signed, so there is no " +
			"tolerance; the body hash makes the retry a duplicate.",
		ParseSecret:   parseHelpScoutSecret,
		Verify:        helpscoutMAC.verifier(bodyHashIdentity),
		Sign:          signHelpScout,
		ExampleSecret: sharedExample(""),
		ExampleBody:   helpscoutExampleBody,
	}
}

// signHelpScout produces the headers Help Scout sends. A webhook has one secret key, so only secrets[0] signs. X-HelpScout-Event is omitted: SignInput carries no event type.
func signHelpScout(in SignInput, secrets []string) (Headers, error) {
	return helpscoutMAC.signJSON(helpscoutName, parseHelpScoutSecret, in, secrets)
}

// helpscoutExampleBody is a convo.created body (a v2 Conversation object, abridged).
func helpscoutExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"id":1234567,"number":42,"type":"email","folderId":1,"status":"active","state":"published","subject":"Refund request","preview":"Hi there","mailboxId":85,"createdAt":"2026-01-05T21:08:38Z","primaryCustomer":{"id":200,"email":"customer@example.com"},"_embedded":{"threads":[{"id":` + string(id) + `,"type":"customer","body":"Hi there"}]}}`)
}
