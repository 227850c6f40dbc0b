package protocol

import "testing"

// A Stripe-Signature element with an empty key ("=x") is not key=value: the header is
// malformed even beside a genuine v1 (stricter than stripe-go, which skips it as an unknown
// scheme).
func TestStripeRejectsElementWithEmptyKey(t *testing.T) {
	t.Parallel()
	p := Stripe()
	keys := keysFor(t, p, stripeSecret)
	good := stripeHeaderAt(fixedNow.Unix(), stripeBody, stripeSecret)
	if _, err := p.Verify(stripeRequest(good, stripeBody), keys, Params{Now: fixedNow}); err != nil {
		t.Fatalf("genuine delivery rejected: %v", err)
	}
	for _, v := range []string{good + ",=x", "=x," + good} {
		req := stripeRequest(v, stripeBody)
		res, err := p.Verify(req, keys, Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
}
