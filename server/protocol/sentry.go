package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// Sentry integration-platform webhooks: Sentry-Hook-Signature is the hex HMAC-SHA256 of the
// raw body keyed with the integration's Client Secret; Sentry-Hook-Timestamp is sent but not
// signed. The official example also reads the older Sentry-App-Signature name
// (getsentry/integration-platform-example backend-py/src/api/middleware/verify_sentry_signature.py).
// Sentry sends an empty body with some requests; its HMAC is that of the empty string.
var sentryProvider = bodyMACProvider{
	name: "sentry",
	scheme: bodyMACScheme{
		headers: []string{"Sentry-Hook-Signature", "Sentry-App-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Sentry integration client secret"),
	identity: sentryIdentity,
	extra:    eventIDHeader("sentry", "Request-ID"),
}

// sentryIdentity is the body's SHA-256, or Request-ID for an empty body. Request-ID is a
// random UUID drawn for every send (getsentry/sentry app_platform_event.py: request_uuid =
// uuid4().hex in the headers, with Sentry-Hook-Timestamp), and Sentry retries a published
// app's webhook up to three times on a 5xx or timeout (sentry_apps/tasks/sentry_apps.py,
// Retry(times=3, delay=60*5)), each with a new one: keyed on it, a retry of a delivery that
// was stored but answered late would be stored and worked again. The body, the JSON of the
// action, installation, data and actor the task was queued with, is the same on every retry
// and differs between events. An empty body (some of Sentry's UI component requests) says
// nothing, so there the request's own id serves.
func sentryIdentity(req *Request) (string, error) {
	if len(req.Body) > 0 {
		return bodySHA256ID(req.Body), nil
	}
	return headerIdentity(req.Headers, "Request-ID")
}

// Sentry returns the protocol for Sentry integration-platform (internal and public
// integration) webhooks.
//
// Verify rejects, in this order: neither Sentry-Hook-Signature nor Sentry-App-Signature
// (missing signature); the chosen one empty or not 64 lowercase hex digits (malformed
// signature); no key matching (signature mismatch); an empty body without a non-empty
// Request-ID (missing event id).
func Sentry() *Protocol {
	return &Protocol{
		Name:            "sentry",
		DisplayName:     "Sentry",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, Sentry-Hook-Signature",
		IdentitySource:  "\"body-sha256:\" + hex SHA-256 of the raw body (the same on Sentry's retries of issue.created, error.created, comment.* and alert webhooks; a retry of issue.resolved, assigned, ignored or unresolved serialises the issue again, its count and lastSeen with it, and may be accepted again); for an empty body, the Request-ID header. Request-ID itself is drawn afresh for every send, retries included",
		DocsURL:         "https://docs.sentry.io/organization/integrations/integration-platform/webhooks/",
		Retries: "Sentry retries a published integration's webhook up to 3 times, 5 minutes apart, " +
			"on a 5xx, a timeout or a connection error, not on a 4xx; an internal (unpublished) " +
			"integration's is not retried (getsentry/sentry sentry_apps/tasks/sentry_apps.py). Each " +
			"attempt has a new Request-ID and Sentry-Hook-Timestamp. The body is the same for " +
			"issue.created, error.created, comment.* and alerts, whose data is fixed when the task is " +
			"queued; workflow_notification (issue.resolved, assigned, ignored, unresolved) reloads and " +
			"serialises the issue on every attempt, so its count, userCount, lastSeen and numComments " +
			"may have moved: such a retry gets another identity and is accepted again. Nothing " +
			"time-bound is signed (Sentry-Hook-Timestamp is outside the HMAC), so a late retry still " +
			"verifies and dedupes by the body hash.",
		ParseSecret:   sentryProvider.secret,
		Verify:        sentryProvider.verify,
		Sign:          sentryProvider.sign,
		ExampleSecret: exampleSecret("", 32, hex.EncodeToString),
	}
}
