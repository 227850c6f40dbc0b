package protocol

import (
	"strings"
	"testing"
)

const (
	woocommerceSecret    = "Pf0W>9hG+z}2Ks4^qv!8@1mLr#Xc7Tn$"
	woocommerceSecretNew = "c2e9d1a7b4f60385e2d9c1b7a4f60385"
	woocommerceDelivery  = "9f3ae4bc21f0c8de7a5b6c4d3e2f1a0b"
	woocommerceBody      = `{"id":727,"parent_id":0,"status":"processing","currency":"USD","total":"29.35","date_modified":"2026-01-01T00:00:00"}`
)

func TestWooCommerceVerify(t *testing.T) {
	t.Parallel()
	p := WooCommerce()
	in := SignInput{Body: []byte(woocommerceBody), EventID: woocommerceDelivery}
	good := signed(t, p, in, woocommerceSecret)
	indep := hmacSHA256Base64(woocommerceSecret, woocommerceBody)
	event := woocommerceDelivery + ":" + bodySHA256ID([]byte(woocommerceBody))
	fx := signingFixture{
		p: p, secret: woocommerceSecret, secretNew: woocommerceSecretNew, in: in, wantEvent: event,
		sigHeader: "X-WC-Webhook-Signature",
		noID:      withoutHeader(good, "X-WC-Webhook-Delivery-ID"),
		malformed: []string{"garbage", strings.TrimRight(indep, "="), hmacSHA256Hex(woocommerceSecret, woocommerceBody), "sha256=" + indep},
	}
	cs := fx.cases(t)
	ping := &Request{Method: "POST", Body: []byte("webhook_id=12")}
	cs = append(cs,
		verifyCase{name: "independent signature accepted", req: withHeader(good, "X-WC-Webhook-Signature", indep), keys: []string{woocommerceSecret}, wantKey: "k0", wantEvent: event},
		verifyCase{name: "ping with a signature header is judged as a delivery", req: withHeader(ping, "X-WC-Webhook-Signature", indep), keys: []string{woocommerceSecret}, wantReason: ReasonSignatureMismatch},
		verifyCase{name: "ping-like body with more fields is not a ping", req: &Request{Method: "POST", Body: []byte("webhook_id=12&x=1")}, keys: []string{woocommerceSecret}, wantReason: ReasonMissingSignature},
		verifyCase{name: "ping body by GET is not a ping", req: &Request{Method: "GET", Body: []byte("webhook_id=12")}, keys: []string{woocommerceSecret}, wantReason: ReasonMissingSignature},
		verifyCase{name: "empty delivery id", req: withHeader(good, "X-WC-Webhook-Delivery-ID", ""), keys: []string{woocommerceSecret}, wantReason: ReasonMissingEventID},
	)
	runVerifyCases(t, p, cs)
}

// TestWooCommercePing: the unsigned activation ping gets a bare 200 and is not an event.
func TestWooCommercePing(t *testing.T) {
	t.Parallel()
	res, err := WooCommerce().Verify(&Request{Method: "POST", Body: []byte("webhook_id=42"), Headers: Headers{{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}}}, nil, Params{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	if res.Handshake == nil || res.Handshake.Status != 200 || res.EventID != "" || res.KeyID != "" {
		t.Fatalf("result %+v", res)
	}
}

// TestWooCommerceDocumentedAlgorithm pins Sign to WC_Webhook::generate_signature
// (base64_encode(hash_hmac('sha256', $payload, $secret, true)); no vector is published),
// computed with openssl:
// printf '%s' "$woocommerceBody" | openssl dgst -sha256 -hmac "$woocommerceSecret" -binary | base64
func TestWooCommerceDocumentedAlgorithm(t *testing.T) {
	t.Parallel()
	h, err := WooCommerce().Sign(SignInput{Body: []byte(woocommerceBody), EventID: woocommerceDelivery}, []string{woocommerceSecret})
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{Headers: h}
	if header(r, "X-WC-Webhook-Signature") != woocommerceOpenSSL || header(r, "X-WC-Webhook-Delivery-ID") != woocommerceDelivery {
		t.Fatalf("Sign = %+v", h)
	}
}

func FuzzWooCommerceSignatureHeader(f *testing.F) {
	fuzzSignatureHeader(f, WooCommerce(), woocommerceSecret, "X-WC-Webhook-Signature",
		SignInput{Body: []byte(woocommerceBody), EventID: woocommerceDelivery}, Params{Now: fixedNow},
		"", "====", "webhook_id=1")
}

const woocommerceOpenSSL = "F5yh2Fg/ktR10AG7hM0+FUl+dXCotKLlDgZN95SejpU="

// TestWooCommerceSameSecondDeliveriesAreDistinct: WooCommerce's X-WC-Webhook-Delivery-ID is
// wp_hash(webhook id . strtotime('now')) (WC_Webhook::get_new_delivery_id, woocommerce/woocommerce
// plugins/woocommerce/includes/class-wc-webhook.php), so every delivery one webhook makes within
// the same second carries the same id. Two different events in that second (two orders updated
// by one bulk action) must not be taken for one: the second would be answered DUPLICATE and lost.
// A re-forward of the same delivery (same id, same body) must still be one event.
func TestWooCommerceSameSecondDeliveriesAreDistinct(t *testing.T) {
	t.Parallel()
	p := WooCommerce()
	keys := keysFor(t, p, woocommerceSecret)
	const sameSecond = "5d41402abc4b2a76b9719d911017c592"
	id := func(body string) string {
		return eventIDOf(t, p, keys, signed(t, p, SignInput{Body: []byte(body), EventID: sameSecond}, woocommerceSecret), fixedNow)
	}
	const first = `{"id":727,"status":"processing"}`
	a, b := id(first), id(`{"id":728,"status":"processing"}`)
	if a == b {
		t.Fatalf("two different events sent in one second share the identity %q", a)
	}
	if again := id(first); again != a {
		t.Fatalf("the same delivery forwarded twice has identities %q and %q", a, again)
	}
}
