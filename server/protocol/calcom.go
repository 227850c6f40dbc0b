package protocol

import (
	"crypto/sha256"
	"encoding/json"
)

// Cal.com signs the raw body (JSON, or the rendered custom payload template) with HMAC-SHA256
// keyed with the webhook's secret and sends the hex digest in X-Cal-Signature-256; a webhook
// without a secret sends the literal "no-secret-provided", which is refused here as malformed.
// There is no timestamp. Source: calcom/cal.com
// packages/features/webhooks/lib/sendPayload.ts (createWebhookSignature, _sendPayload).
const (
	calcomName            = "cal-com"
	calcomSignatureHeader = "X-Cal-Signature-256"
)

var (
	calcomMAC         = bodyMAC{header: calcomSignatureHeader, prefix: "", newHash: sha256.New, size: sha256.Size, encoding: digestHex}
	parseCalComSecret = sharedSecretParser("Cal.com webhook secret")
)

// CalCom returns the protocol for Cal.com webhooks.
//
// Verify rejects, in this order: no X-Cal-Signature-256 (missing signature); a value that is not
// 64 lowercase hex digits, such as "no-secret-provided" (malformed signature); no key matching
// (signature mismatch). The identity is the body's hash, so it is never missing.
func CalCom() *Protocol {
	return &Protocol{
		Name:            calcomName,
		DisplayName:     "Cal.com",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Cal-Signature-256",
		IdentitySource:  "sha256 of the raw body (\"body-sha256:<hex>\"): Cal.com sends no event id; the body carries triggerEvent, createdAt and the booking, so it is the same for one trigger",
		DocsURL:         "https://github.com/calcom/cal.com/blob/main/packages/features/webhooks/lib/sendPayload.ts",
		Retries: "Cal.com sends one POST per trigger (calcom/cal.com packages/features/webhooks/lib/sendPayload.ts); " +
			"a non-2xx answer is only logged, never resent. When the send runs as a tasker task " +
			"(TASKER_ENABLE_WEBHOOKS, and scheduled or delayed webhooks such as MEETING_STARTED), a send " +
			"that throws (a connection or DNS error) is run again until the task's maxAttempts " +
			"(packages/features/tasker/tasks/sendWebook.ts rethrows; packages/features/tasker/repository.ts " +
			"picks tasks up while attempts < maxAttempts), so a request that reached this server may " +
			"arrive again. Each run sends the task's stored payload, createdAt included, so the retry's " +
			"body is identical and its body hash claims it as a duplicate. No timestamp is signed, so " +
			"there is no tolerance.",
		ParseSecret:   parseCalComSecret,
		Verify:        calcomMAC.verifier(bodyHashIdentity),
		Sign:          signCalCom,
		ExampleSecret: sharedExample(""),
		ExampleBody:   calcomExampleBody,
	}
}

// signCalCom produces the headers Cal.com sends. A webhook has one secret, so only secrets[0] signs.
func signCalCom(in SignInput, secrets []string) (Headers, error) {
	return calcomMAC.signJSON(calcomName, parseCalComSecret, in, secrets)
}

// calcomExampleBody is a BOOKING_CREATED trigger as sendPayload builds it; the event id goes in the booking uid.
func calcomExampleBody(eventID string) []byte {
	id, _ := json.Marshal(eventID)
	return []byte(`{"triggerEvent":"BOOKING_CREATED","createdAt":"2026-01-05T21:08:38.000Z","payload":{"type":"30min","title":"30 min between Pro Example and John Doe","startTime":"2026-01-12T10:00:00Z","endTime":"2026-01-12T10:30:00Z","organizer":{"name":"Pro Example","email":"pro@example.com","timeZone":"Europe/London"},"attendees":[{"name":"John Doe","email":"john@example.com","timeZone":"Europe/London"}],"uid":` + string(id) + `,"bookingId":91,"status":"ACCEPTED"}}`)
}
