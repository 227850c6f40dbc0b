package protocol

import "testing"

// TestCoinbaseCommerceSignatureHeaderIsOneSignature: coinbase-commerce-node's
// Webhook.verifySigHeader compares X-CC-Webhook-Signature, as a whole, with the hex HMAC-SHA256
// of the body (providers.md); the header is never a list, so a value pairing the right
// signature with another one is malformed, not accepted on the strength of its matching half.
func TestCoinbaseCommerceSignatureHeaderIsOneSignature(t *testing.T) {
	t.Parallel()
	p := CoinbaseCommerce()
	other := hmacSHA256Hex(coinbaseWrongSecret, coinbaseVectorBody)
	for _, v := range []string{coinbaseVectorSig + "," + other, other + "," + coinbaseVectorSig, other + ", " + coinbaseVectorSig} {
		req := coinbaseRequest(v, coinbaseVectorBody)
		res, err := p.Verify(req, keysFor(t, p, coinbaseSecret), Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
}

// TestCoinbaseCommerceSecretMustBeExact: the shared secret keys the HMAC byte for byte, so an
// empty secret or one with surrounding whitespace (a copy-paste slip) is refused when the
// endpoint is configured rather than making every delivery a mismatch.
func TestCoinbaseCommerceSecretMustBeExact(t *testing.T) {
	t.Parallel()
	checkSecretsRefused(t, CoinbaseCommerce(), "", " "+coinbaseSecret, coinbaseSecret+"\n")
}
