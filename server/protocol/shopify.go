package protocol

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// Shopify signs the raw body with HMAC-SHA256 keyed with the app's client secret (or, for a
// webhook created in the store admin, the signing key shown there) and sends it base64 in
// X-Shopify-Hmac-Sha256. Nothing else is signed: there is no timestamp.
//
// Identity. Shopify's pages differ on the dedup header. "Ignore duplicate webhooks"
// (https://shopify.dev/docs/apps/build/webhooks/ignore-duplicates) names X-Shopify-Event-Id,
// but the delivery-structure page defines it as "a unique ID shared across all deliveries
// produced by the same merchant action": one action that fires several topics to one URL
// (orders/create and orders/updated, say) sends them all under one Event-Id, so keying on it
// would accept the first and answer the others DUPLICATE, losing them. The same pages call
// X-Shopify-Webhook-Id "a unique composite key per delivery. Use to identify and deduplicate
// individual deliveries", and verify-deliveries says to "ignore duplicate deliveries using
// X-Shopify-Webhook-Id": it is kept on retries, so it is the identity. Deliveries without it
// fall back to X-Shopify-Event-Id qualified by X-Shopify-Topic and the body's hash, so that the
// topics and objects of one action stay apart. Two subscriptions to one topic at one URL then
// give two deliveries, each accepted once.
//
// Shopify Events (https://shopify.dev/docs/apps/build/events/verify-deliveries), configured
// beside webhooks in the same app and meant to replace them, signs the same way with the same
// client secret but names the headers without the X- prefix: Shopify-Hmac-Sha256, and
// Shopify-Webhook-Id for deduplication. Both spellings are read, the X- one first.
var shopifyScheme = bodyMACScheme{
	headers: []string{"X-Shopify-Hmac-Sha256", "Shopify-Hmac-Sha256"},
	newHash: sha256.New,
	size:    sha256.Size,
	enc:     digestBase64,
}

// parseShopifySecret keeps the client secret's bytes: Shopify keys the HMAC with the string.
var parseShopifySecret = sharedSecretParser("Shopify client secret")

// Shopify returns the protocol for Shopify webhooks delivered over HTTPS (EventBridge and
// Pub/Sub deliveries are not HTTP requests and carry no HMAC).
//
// Verify rejects, in this order: no X-Shopify-Hmac-Sha256 nor (Shopify Events)
// Shopify-Hmac-Sha256 (missing signature); an empty value or one that is not 32 bytes of padded
// standard base64 (malformed signature); no key matching (signature mismatch); none of
// X-Shopify-Webhook-Id, Shopify-Webhook-Id and X-Shopify-Event-Id (missing event id).
func Shopify() *Protocol {
	return &Protocol{
		Name:            "shopify",
		DisplayName:     "Shopify",
		SignatureScheme: "HMAC-SHA256 (base64) of the raw body, X-Shopify-Hmac-Sha256 (Shopify-Hmac-Sha256 for Shopify Events)",
		IdentitySource:  "X-Shopify-Webhook-Id header (the delivery; same on retries; Shopify-Webhook-Id for Shopify Events), else X-Shopify-Event-Id + \":\" + X-Shopify-Topic + \":body-sha256:<hex>\" of the raw body (the Event-Id is shared by every topic, and every object, one merchant action touches; a retry resends the original payload; without a topic header, the Event-Id and the body hash)",
		DocsURL:         "https://shopify.dev/docs/apps/build/webhooks/verify-deliveries",
		Retries: "Shopify retries a failed delivery (no 2xx within 5 s) 8 times over 4 hours with " +
			"exponential backoff, with the original payload and the original HMAC " +
			"(https://shopify.dev/changelog/updates-to-webhook-retry-mechanism); no timestamp is " +
			"signed, so there is no tolerance to outlast, and the webhook id repeats on every retry. " +
			"After a client-secret rotation Shopify may keep signing with the old secret for up to " +
			"an hour: keep both secrets configured meanwhile.",
		ParseSecret:   parseShopifySecret,
		Verify:        verifyShopify,
		Sign:          signShopify,
		ExampleSecret: exampleSecret("shpss_", 16, hex.EncodeToString),
	}
}

func verifyShopify(req *Request, keys []Key, _ Params) (Result, error) {
	keyID, err := shopifyScheme.authenticate(req, keys)
	if err != nil {
		return Result{}, err
	}
	id, err := shopifyIdentity(req)
	if err != nil {
		return Result{}, err
	}
	return Result{KeyID: keyID, EventID: id}, nil
}

// shopifyIdentity is the delivery's webhook id, else its X-Shopify-Event-Id qualified by the
// topic and the body's hash: one merchant action fires every topic it touches under one
// Event-Id, often with the same body (orders/create and orders/updated), and an action on many
// objects (a bulk edit of orders) may fire one topic for each under that Event-Id, so the
// Event-Id alone, or with the topic, would merge them; a retry carries the original payload
// under the same topic, so "<event id>:<topic>:body-sha256:<hex>" still makes it a duplicate.
// Without a topic header, "<event id>:body-sha256:<hex>".
func shopifyIdentity(req *Request) (string, error) {
	if id, _ := headerIdentity(req.Headers, "X-Shopify-Webhook-Id", "Shopify-Webhook-Id"); id != "" {
		return id, nil
	}
	id, _ := req.Headers.Get("X-Shopify-Event-Id")
	if id == "" {
		return "", Reject(ReasonMissingEventID, "no X-Shopify-Webhook-Id, Shopify-Webhook-Id or X-Shopify-Event-Id header")
	}
	if topic, _ := headerIdentity(req.Headers, "X-Shopify-Topic", "Shopify-Topic"); topic != "" {
		id += ":" + topic
	}
	return id + ":" + bodySHA256ID(req.Body), nil
}

// signShopify sends the HMAC of the first secret (Shopify signs with one secret at a time),
// X-Shopify-Event-Id and X-Shopify-Webhook-Id (both in.EventID: SignInput has one id), and
// X-Shopify-Triggered-At when a timestamp is given. X-Shopify-Topic and X-Shopify-Shop-Domain
// are omitted: SignInput carries neither.
func signShopify(in SignInput, secrets []string) (Headers, error) {
	keys, err := parseSigningKeys("shopify", secrets, parseShopifySecret)
	if err != nil {
		return nil, err
	}
	if in.EventID == "" {
		return nil, fmt.Errorf("shopify: %w for X-Shopify-Webhook-Id and X-Shopify-Event-Id", ErrSignNeedsEventID)
	}
	h := Headers{
		{Name: "X-Shopify-Hmac-Sha256", Value: shopifyScheme.signature(in.Body, keys)},
		{Name: "X-Shopify-Event-Id", Value: in.EventID},
		{Name: "X-Shopify-Webhook-Id", Value: in.EventID},
	}
	if !in.Timestamp.IsZero() {
		h = append(h, Header{Name: "X-Shopify-Triggered-At", Value: in.Timestamp.UTC().Format(time.RFC3339Nano)})
	}
	return h, nil
}
