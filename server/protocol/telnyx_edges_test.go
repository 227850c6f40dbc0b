package protocol

import "testing"

// Without an endpoint tolerance, Telnyx's default is 300 seconds (telnyxDefaultTolerance;
// providers.md has no Telnyx entry): a delivery signed 301 seconds ago is stale, 299 is not.
func TestTelnyxDefaultToleranceIs300Seconds(t *testing.T) {
	t.Parallel()
	p := Telnyx()
	_, pub := telnyxKeys(t, rfc8032Test1Private)
	keys := keysFor(t, p, pub)
	now := fixedNow.Unix()
	req := telnyxSigned(t, now-299, telnyxBody, rfc8032Test1Private)
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	req = telnyxSigned(t, now-301, telnyxBody, rfc8032Test1Private)
	res, err = p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", req)
}

// An empty data.id is not an identity: the delivery is rejected, not stored under "".
func TestTelnyxEmptyDataIDRejected(t *testing.T) {
	t.Parallel()
	p := Telnyx()
	_, pub := telnyxKeys(t, rfc8032Test1Private)
	body := `{"data":{"event_type":"message.sent","id":"","record_type":"event"}}`
	req := telnyxSigned(t, fixedNow.Unix(), body, rfc8032Test1Private)
	res, err := p.Verify(req, keysFor(t, p, pub), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingEventID, "", req)
}
