package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// Bitbucket (Cloud and Data Center/Server): when the webhook has a secret, X-Hub-Signature is
// "sha256=<hex>", the HMAC-SHA256 of the raw body keyed with that secret
// (confluence.atlassian.com/bitbucketserver/manage-webhooks; Bitbucket Cloud since 2023).
// Cloud names each request in X-Request-UUID (with X-Attempt-Number counting retries);
// Data Center in X-Request-Id.
var bitbucketProvider = bodyMACProvider{
	name: "bitbucket",
	scheme: bodyMACScheme{
		headers: []string{"X-Hub-Signature"},
		version: "sha256",
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret: sharedSecretParser("Bitbucket webhook secret"),
	identity: func(req *Request) (string, error) {
		return headerIdentity(req.Headers, "X-Request-UUID", "X-Request-Id")
	},
	extra: eventIDHeader("bitbucket", "X-Request-UUID"),
}

// Bitbucket returns the protocol for Bitbucket Cloud and Bitbucket Data Center webhooks with a
// secret (a webhook without one is unsigned and cannot be verified).
//
// Verify rejects, in this order: no X-Hub-Signature (missing signature); an empty value, no
// '=', or hex that is not 64 lowercase digits (malformed signature); a prefix other than
// sha256= (missing signature); no key matching (signature mismatch); neither X-Request-UUID
// nor X-Request-Id (missing event id).
func Bitbucket() *Protocol {
	return &Protocol{
		Name:            "bitbucket",
		DisplayName:     "Bitbucket",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Hub-Signature sha256=",
		IdentitySource:  "X-Request-UUID header (Bitbucket Cloud), else X-Request-Id (Data Center)",
		DocsURL:         "https://support.atlassian.com/bitbucket-cloud/docs/manage-webhooks/",
		Retries: "Bitbucket Cloud resends a request answered with a 5xx status up to two more times " +
			"and numbers the attempts in X-Attempt-Number (support.atlassian.com/bitbucket-cloud/docs/" +
			"troubleshoot-webhooks and event-payloads); whether it also resends after a timeout or a " +
			"connection error is not stated. Atlassian describes X-Request-UUID only as \"the UUID of the " +
			"request\"; that it stays the same across attempts is NOT CONFIRMED. Only the body is signed, " +
			"no timestamp, so nothing expires.",
		ParseSecret:   bitbucketProvider.secret,
		Verify:        bitbucketProvider.verify,
		Sign:          bitbucketProvider.sign,
		ExampleSecret: exampleSecret("", 24, hex.EncodeToString),
	}
}
