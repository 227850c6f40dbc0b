package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// Razorpay: X-Razorpay-Signature is the hex HMAC-SHA256 of the raw body keyed with the
// webhook secret set in the Dashboard (razorpay-go utils.VerifyWebhookSignature;
// https://razorpay.com/docs/webhooks/validate-test/). x-razorpay-event-id names the event and
// is the same on every retry of it.
var razorpayProvider = bodyMACProvider{
	name: "razorpay",
	scheme: bodyMACScheme{
		headers: []string{"X-Razorpay-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestHex,
	},
	secret: sharedSecretParser("Razorpay webhook secret"),
	identity: func(req *Request) (string, error) {
		return headerIdentity(req.Headers, "x-razorpay-event-id")
	},
	extra: eventIDHeader("razorpay", "x-razorpay-event-id"),
}

// Razorpay returns the protocol for Razorpay webhooks.
//
// Verify rejects, in this order: no X-Razorpay-Signature (missing signature); an empty value
// or not 64 lowercase hex digits (malformed signature); no key matching (signature mismatch);
// no or empty x-razorpay-event-id (missing event id).
func Razorpay() *Protocol {
	return &Protocol{
		Name:            "razorpay",
		DisplayName:     "Razorpay",
		SignatureScheme: "HMAC-SHA256 (hex) of the raw body, X-Razorpay-Signature",
		IdentitySource:  "x-razorpay-event-id header (the same on every retry of the event)",
		DocsURL:         "https://razorpay.com/docs/webhooks/validate-test/",
		Retries: "Razorpay retries a delivery not answered 2xx within 5 s with exponential back-off " +
			"for 24 hours, and disables a webhook that keeps failing; it asks receivers to dedupe " +
			"on x-razorpay-event-id (https://razorpay.com/docs/webhooks/best-practices/; schedule " +
			"details NOT CONFIRMED from a stored copy). Only the body is signed, no timestamp, so " +
			"late retries verify.",
		ParseSecret:   razorpayProvider.secret,
		Verify:        razorpayProvider.verify,
		Sign:          razorpayProvider.sign,
		ExampleSecret: exampleSecret("", 16, hex.EncodeToString),
	}
}
