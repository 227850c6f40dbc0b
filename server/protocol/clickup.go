package protocol

import (
	"crypto/sha256"
	"encoding/json"
)

// ClickUp signs the raw body with HMAC-SHA256 keyed with the webhook.secret returned when the
// webhook is created and sends the hex digest in X-Signature. There is no timestamp, and the
// sources read document no delivery id. Source: https://developer.clickup.com/docs/webhooksignature
const (
	clickupName            = "clickup"
	clickupSignatureHeader = "X-Signature"
)

var (
	clickupMAC         = bodyMAC{header: clickupSignatureHeader, prefix: "", newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseClickUpSecret = sharedSecretParser("ClickUp webhook secret")
)

// ClickUp returns the protocol for ClickUp webhooks.
//
// Verify rejects, in this order: no X-Signature (missing signature); a value that is not 64
// lowercase hex digits (malformed signature); no key matching (signature mismatch). The
// identity is the body's hash, so it is never missing.
func ClickUp() *Protocol {
	return &Protocol{
		Name:            clickupName,
		DisplayName:     "ClickUp",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Signature",
		IdentitySource:  "sha256 of the raw body (\"body-sha256:<hex>\"): ClickUp sends no delivery id header, and a retry resends the same body",
		DocsURL:         "https://developer.clickup.com/docs/webhooksignature",
		Retries: "ClickUp sends an event up to five times while its delivery fails (a non-2xx status, or no answer " +
			"within 7 s), then drops it and counts a failure against the webhook; 100 such failures, or one 410, " +
			"suspend the webhook (https://developer.clickup.com/docs/webhookhealth; the intervals are not documented). " +
			"A retry resends the same body. No timestamp is signed, so there is no tolerance; the body hash makes " +
			"an identical retry a duplicate, though two genuinely identical events would also " +
			"collapse into one.",
		ParseSecret:   parseClickUpSecret,
		Verify:        clickupMAC.verifier(bodyHashIdentity),
		Sign:          signClickUp,
		ExampleSecret: sharedExample(""),
		ExampleBody:   clickupExampleBody,
	}
}

// signClickUp produces the headers ClickUp sends. A webhook has one secret (returned when it is created), so only secrets[0] signs.
func signClickUp(in SignInput, secrets []string) (Headers, error) {
	return clickupMAC.signJSON(clickupName, parseClickUpSecret, in, secrets)
}

// clickupExampleBody is a taskCreated event.
func clickupExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"webhook_id":"7689a169-a000-4985-8676-6902b96d6627","event":"taskCreated","task_id":"c0j","history_items":[{"id":` + string(id) + `,"type":1,"date":"1767647318000","field":"status","after":{"status":"to do"}}]}`)
}
