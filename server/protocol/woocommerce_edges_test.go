package protocol

import "testing"

// TestWooCommercePingBodyIsExactlyWebhookID: WooCommerce's activation ping body is
// "webhook_id=" . $this->get_id() (WC_Webhook::deliver_ping), the webhook's WordPress post id,
// which has as many digits as the site's post count needs, up to the 20 of a 64-bit id. Pings
// from webhooks with long ids must be answered 200, or WooCommerce refuses to activate them; a
// body that merely contains webhook_id= after something else, or an id of 21 digits, is not the
// ping and stays an unsigned delivery.
func TestWooCommercePingBodyIsExactlyWebhookID(t *testing.T) {
	t.Parallel()
	p := WooCommerce()
	for _, body := range []string{"webhook_id=7", "webhook_id=1234567", "webhook_id=18446744073709551615"} {
		res, err := p.Verify(&Request{Method: "POST", Body: []byte(body)}, nil, Params{Now: fixedNow})
		if err != nil {
			t.Fatalf("ping %q refused: %v", body, err)
		}
		if res.Handshake == nil || res.Handshake.Status != 200 || res.EventID != "" {
			t.Fatalf("ping %q: result %+v", body, res)
		}
	}
	for _, body := range []string{"x=1&webhook_id=12", " webhook_id=12", "webhook_id=123456789012345678901"} {
		req := &Request{Method: "POST", Body: []byte(body)}
		res, err := p.Verify(req, keysFor(t, p, woocommerceSecret), Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMissingSignature, "", req)
	}
}
