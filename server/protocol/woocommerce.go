package protocol

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"regexp"
)

// WooCommerce: X-WC-Webhook-Signature is the base64 HMAC-SHA256 of the raw body keyed with the
// webhook's secret (WC_Webhook::generate_signature: base64_encode(hash_hmac('sha256',
// $payload, $secret, true))). Each delivery also carries X-WC-Webhook-Source, -Topic,
// -Resource, -Event, -ID (the webhook) and -Delivery-ID (the delivery). When a webhook is
// saved active, WooCommerce first POSTs an unsigned ping whose body is "webhook_id=<id>" and
// refuses to activate the webhook unless it gets a 2xx (WC_Webhook::deliver_ping).
var woocommerceProvider = bodyMACProvider{
	name: "woocommerce",
	scheme: bodyMACScheme{
		headers: []string{"X-WC-Webhook-Signature"},
		newHash: sha256.New,
		size:    sha256.Size,
		enc:     digestBase64,
	},
	secret:   sharedSecretParser("WooCommerce webhook secret"),
	identity: woocommerceIdentity,
	extra: func(in SignInput) (Headers, error) {
		if in.EventID == "" {
			return nil, fmt.Errorf("woocommerce: %w for X-WC-Webhook-Delivery-ID", ErrSignNeedsEventID)
		}
		return Headers{
			{Name: "X-WC-Webhook-Source", Value: "https://shop.example.com/"},
			{Name: "X-WC-Webhook-Topic", Value: "order.updated"},
			{Name: "X-WC-Webhook-Resource", Value: "order"},
			{Name: "X-WC-Webhook-Event", Value: "updated"},
			{Name: "X-WC-Webhook-ID", Value: "1"},
			{Name: "X-WC-Webhook-Delivery-ID", Value: in.EventID},
		}, nil
	},
}

// woocommerceIdentity is "<X-WC-Webhook-Delivery-ID>:body-sha256:<hex>". The delivery id alone
// is not unique: WC_Webhook::get_new_delivery_id is wp_hash(webhook id . strtotime('now')), the
// same for every delivery one webhook makes within a second, so two events in that second (a
// bulk edit of several orders) would share it and the second would be lost as a duplicate. The
// body's hash tells them apart; a re-forward of one delivery keeps both parts.
func woocommerceIdentity(req *Request) (string, error) {
	id, err := headerIdentity(req.Headers, "X-WC-Webhook-Delivery-ID")
	if err != nil {
		return "", err
	}
	return id + ":" + bodySHA256ID(req.Body), nil
}

// woocommercePing is the body of WooCommerce's activation ping.
var woocommercePing = regexp.MustCompile(`^webhook_id=[0-9]{1,20}$`)

// WooCommerce returns the protocol for WooCommerce (REST API) webhooks.
//
// An unsigned POST whose whole body is webhook_id=<digits> is the activation ping and is
// answered 200 as a handshake (it is not stored). Otherwise Verify rejects, in this order: no
// X-WC-Webhook-Signature (missing signature); an empty value or one that is not 32 bytes of
// padded standard base64 (malformed signature); no key matching (signature mismatch); no or
// empty X-WC-Webhook-Delivery-ID (missing event id).
func WooCommerce() *Protocol {
	return &Protocol{
		Name:            "woocommerce",
		DisplayName:     "WooCommerce",
		SignatureScheme: "HMAC-SHA256 (base64) of the raw body, X-WC-Webhook-Signature; unsigned webhook_id= ping",
		IdentitySource: "X-WC-Webhook-Delivery-ID header + \":\" + " + bodyHashPrefix + "<hex SHA-256 of the raw body> " +
			"(WooCommerce's delivery id is a hash of the webhook id and the current second, shared by every " +
			"delivery of that second; the resource id in X-WC-Webhook-Resource + body \"id\" names the " +
			"object, which many events share)",
		DocsURL: "https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks",
		Retries: "WooCommerce sends each delivery once, from Action Scheduler, and does not retry a " +
			"failed one; it counts failures and disables the webhook after 5 consecutive ones " +
			"(WC_Webhook::failed_delivery). A redelivery is a new delivery with a new id. Nothing " +
			"is timed, so there is no tolerance.",
		ParseSecret:   woocommerceProvider.secret,
		Verify:        verifyWooCommerce,
		Sign:          woocommerceProvider.sign,
		ExampleSecret: exampleSecret("", 24, base64.StdEncoding.EncodeToString),
	}
}

func verifyWooCommerce(req *Request, keys []Key, p Params) (Result, error) {
	if req != nil && req.Method == http.MethodPost && woocommercePing.Match(req.Body) {
		if _, signed := req.Headers.Get("X-WC-Webhook-Signature"); !signed {
			return Result{Handshake: &Reply{Status: http.StatusOK}}, nil
		}
	}
	return woocommerceProvider.verify(req, keys, p)
}
