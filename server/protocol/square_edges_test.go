package protocol

import "testing"

// Without a request URL nothing Square signs can be reproduced (Square signs the notification
// URL followed by the body, developer.squareup.com/docs/webhooks/step3validate), so even a MAC
// of the body alone under the right key must not authenticate.
func TestSquareBodyOnlyMACWithoutURLIsRejected(t *testing.T) {
	t.Parallel()
	p := Square()
	req := squareRequest("", squareSigFor("", squareBody, squareKey), squareBody)
	res, err := p.Verify(req, keysFor(t, p, squareKey), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
}
