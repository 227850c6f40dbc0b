package protocol

import (
	"crypto/sha256"
	"net/http"
)

// Dropbox: X-Dropbox-Signature is the hex HMAC-SHA256 of the raw body keyed with the app
// secret (dropbox/mdwebhook app.py: hmac.new(APP_SECRET, request.data, sha256).hexdigest()).
// When the webhook URI is set, Dropbox first sends GET ?challenge=<value> and expects the value
// echoed back as text/plain with X-Content-Type-Options: nosniff; that GET is not signed.
// Notifications ({"list_folder":{"accounts":[...]},"delta":{"users":[...]}}) say only that
// something changed for those accounts and carry no id.
var dropboxProvider = bodyMACProvider{
	name: "dropbox",
	scheme: bodyMACScheme{
		headers: []string{"X-Dropbox-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret:   sharedSecretParser("Dropbox app secret"),
	identity: bodyHashIdentity,
}

// Dropbox returns the protocol for Dropbox app webhooks.
//
// A GET is the verification request: one with a non-empty challenge query parameter is
// answered 200 with the challenge echoed (text/plain, nosniff) as a handshake, unsigned as
// Dropbox sends it; a GET without one is rejected (missing signature). Any other method is a
// notification, and Verify rejects, in this order: no X-Dropbox-Signature (missing signature);
// an empty value or not 64 lowercase hex digits (malformed signature); no key matching
// (signature mismatch). The identity is the body's SHA-256, so it never fails.
func Dropbox() *Protocol {
	return &Protocol{
		Name:            "dropbox",
		DisplayName:     "Dropbox",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Dropbox-Signature; GET ?challenge= echo",
		IdentitySource: "none sent by Dropbox; fallback: " + bodyHashPrefix + "<hex SHA-256 of the raw body>. " +
			"Dropbox notifications only say which accounts changed, so two identical notifications at " +
			"different times collapse into one: the app must re-sync with its cursor on every " +
			"notification it does get, as Dropbox recommends",
		DocsURL: "https://www.dropbox.com/developers/reference/webhooks",
		Retries: "Dropbox expects an answer within 10 s and retries failed notifications with " +
			"back-off (schedule NOT CONFIRMED), disabling a webhook that keeps failing. Only the " +
			"body is signed, no timestamp, so a late retry verifies; it carries the same body, so " +
			"it dedupes by the body hash.",
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
	return dropboxProvider.verify(req, keys, p)
}
