package protocol

import (
	"crypto/sha256"
	"net/http"
	"time"
)

// Dropbox: X-Dropbox-Signature is the hex HMAC-SHA256 of the raw body keyed with the app
// secret (dropbox/mdwebhook app.py: hmac.new(APP_SECRET, request.data, sha256).hexdigest()).
// When the webhook URI is set, Dropbox first sends GET ?challenge=<value> and expects the value
// echoed back as text/plain with X-Content-Type-Options: nosniff; that GET is not signed.
// Notifications ({"list_folder":{"accounts":[...]},"delta":{"users":[...]}}) say only that
// something changed for those accounts and carry no id: every change to an account is sent
// as the same bytes (https://www.dropbox.com/developers/reference/webhooks: "an HTTP request
// ... every time there's a change"; failed requests are retried for about ten minutes).
var dropboxProvider = bodyMACProvider{
	name: "dropbox",
	scheme: bodyMACScheme{
		headers: []string{"X-Dropbox-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	// No identity: verifyDropbox names each notification itself (dropboxNotificationID).
	secret: sharedSecretParser("Dropbox app secret"),
}

// Dropbox returns the protocol for Dropbox app webhooks.
//
// A GET is the verification request: one with a non-empty challenge query parameter is
// answered 200 with the challenge echoed (text/plain, nosniff) as a handshake, unsigned as
// Dropbox sends it; a GET without one is rejected (missing signature). Any other method is a
// notification, and Verify rejects, in this order: no X-Dropbox-Signature (missing signature);
// an empty value or not 64 lowercase hex digits (malformed signature); no key matching
// (signature mismatch). The identity is dropboxNotificationID, so it never fails.
func Dropbox() *Protocol {
	return &Protocol{
		Name:            "dropbox",
		DisplayName:     "Dropbox",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Dropbox-Signature; GET ?challenge= echo",
		IdentitySource: "none sent by Dropbox, whose notifications only say which accounts changed and " +
			"repeat byte for byte for every change to an account: each authenticated notification is its " +
			"own event, \"dropbox-notification:<hex SHA-256 of the raw body>@<verification time in UTC, to the " +
			"nanosecond, e.g. 20261204T193000.123456789Z>\" (a retry or replay is processed again, which a re-sync with the cursor makes " +
			"harmless; merging by the body alone would drop every later change for the dedupe window)",
		EveryDeliveryNew: true,
		DocsURL:          "https://www.dropbox.com/developers/reference/webhooks",
		Retries: "Dropbox expects an answer within 10 s and retries a notification answered non-200 " +
			"or timed out with exponential back-off over about ten minutes, then reports a failure in " +
			"the App Console (Dropbox's webhooks docs). Only the " +
			"body is signed, no timestamp, so a late retry verifies; it is a new event to hookverify " +
			"(nothing tells it from a new change), which the app's cursor-based re-sync absorbs.",
		ParseSecret:   dropboxProvider.secret,
		Verify:        verifyDropbox,
		Sign:          dropboxProvider.sign,
		ExampleSecret: exampleSecret("", 15, alnumString),
		ExampleBody: func(eventID string) []byte {
			return []byte(`{"list_folder":{"accounts":[` + jsonQuote(eventID) + `]},"delta":{"users":[12345678]}}`)
		},
	}
}

func verifyDropbox(req *Request, keys []Key, p Params) (Result, error) {
	if req != nil && req.Method == http.MethodGet {
		q, err := requestQuery(req.URL)
		if err != nil {
			return Result{}, err
		}
		challenge := q.Get("challenge")
		if challenge == "" {
			return Result{}, Reject(ReasonMissingSignature, "a GET without a challenge parameter is neither a verification request nor a signed notification")
		}
		return Result{Handshake: echoReply(challenge)}, nil
	}
	keyID, err := dropboxProvider.scheme.authenticate(req, keys)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: dropboxNotificationID(req.Body, p.Now)}, nil
}

// dropboxNotificationID names one notification by its body and the time it was verified.
// Dropbox's body is the same for every change to the same accounts, so the body alone would
// make each later change a DUPLICATE of the first for the whole dedupe window, and the app
// would not hear of it; the verification time tells them apart. The cost is the other way
// round and harmless: a retry (or a replay) of one notification is processed again, and a
// notification only asks the app to sync from its cursor, which finds nothing new the
// second time.
func dropboxNotificationID(body []byte, now time.Time) string {
	sum := sha256.Sum256(body)
	return "dropbox-notification:" + digestHex.encode(sum[:]) + "@" + now.UTC().Format("20060102T150405.000000000Z")
}
