package protocol

import "testing"

// An event with an empty "id" gives the batch no identity.
func TestGoCardlessEmptyEventIDIsMissingEventID(t *testing.T) {
	t.Parallel()
	p := GoCardless()
	req := gocardlessSigned(t, `{"events":[{"id":"EV1"},{"id":""}]}`, gocardlessSecret)
	res, err := p.Verify(req, keysFor(t, p, gocardlessSecret), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingEventID, "", req)
}
