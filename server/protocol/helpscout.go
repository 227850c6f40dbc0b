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
	helpscoutEventHeader     = "X-HelpScout-Event"
)

var (
	helpscoutMAC         = bodyMAC{header: helpscoutSignatureHeader, prefix: "", newHash: sha1.New, size: sha1.Size, encoding: digestBase64}
	parseHelpScoutSecret = sharedSecretParser("Help Scout webhook secret key")
)

// helpscoutIdentity is "<X-HelpScout-Event>:" + the body's hash, or the body's hash alone when
// the header is absent or empty. The event name is only in that header: "Each request body
// uses the object format linked in the table below" — convo.assigned, convo.created,
// convo.moved, convo.status, convo.tags, convo.custom-fields, convo.customer.reply.created,
// convo.agent.reply.created and convo.note.created all send the "v2 Conversation object"
// (https://developer.helpscout.com/webhooks/). One change can fire several of them (a reply
// that also sets the status and the assignee), each with the conversation as it then is, so
// by the body alone every event after the first would be a DUPLICATE and lost. A retry keeps
// its event name and body, so it stays one identity. The header is not signed: a captured body
// resent under another event name is taken as a new event, as it is by any consumer that reads
// the header.
func helpscoutIdentity(req *Request) (string, error) {
	id := bodySHA256ID(req.Body)
	if ev, _ := req.Headers.Get(helpscoutEventHeader); ev != "" {
		return ev + ":" + id, nil
	}
	return id, nil
}

// HelpScout returns the protocol for Help Scout webhooks.
//
// Verify rejects, in this order: no X-HelpScout-Signature (missing signature); a value that is
// not 20 bytes of canonical padded base64 (malformed signature); no key matching (signature
// mismatch). The identity is the event name and the body's hash, so it is never missing.
func HelpScout() *Protocol {
	return &Protocol{
		Name:            helpscoutName,
		DisplayName:     "Help Scout",
		SignatureScheme: "HMAC-SHA1 (base64) of the raw body, X-HelpScout-Signature",
		IdentitySource: "X-HelpScout-Event header + \":\" + sha256 of the raw body (\"<event>:body-sha256:<hex>\"; the hash alone without the header): " +
			"Help Scout sends no event id (the body is the conversation or customer object, and its \"id\" is the resource's, shared by every " +
			"event about it), and the event name is only in the header, so events one action fires about one conversation have the same body",
		DocsURL: "https://developer.helpscout.com/webhooks/",
		Retries: "Help Scout retries a delivery that is not answered 2xx, with backoff, and deactivates a " +
			"webhook after repeated failures (the exact schedule is not documented in the sources " +
			"read). A retry resends the same body, and no timestamp is signed, so there is no " +
			"tolerance; the event name and body hash make the retry a duplicate.",
		ParseSecret:   parseHelpScoutSecret,
		Verify:        helpscoutMAC.verifier(helpscoutIdentity),
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
