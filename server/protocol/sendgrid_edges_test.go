package protocol

import (
	"testing"
	"time"
)

// Without an endpoint tolerance, SendGrid's default is 25 hours: SendGrid retries "for up to
// 24 hours after the event occurs" and the official helpers check no timestamp, so a batch
// signed 24.5 hours ago (a late retry that was not re-signed) is accepted, and one signed
// 25 hours and a second ago is not.
func TestSendGridDefaultToleranceIs25Hours(t *testing.T) {
	t.Parallel()
	p := SendGrid()
	keys := keysFor(t, p, sgGoPublicKey)
	now := fixedNow.Unix()
	req := sgSigned(t, now-24*3600-1800, sgBody, sgGoPrivateKey)
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	req = sgSigned(t, now-int64(25*time.Hour/time.Second)-1, sgBody, sgGoPrivateKey)
	res, err = p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", req)
}

// An empty sg_event_id is not an identity, even beside a valid one in the same batch.
func TestSendGridEmptyEventIDInBatchRejected(t *testing.T) {
	t.Parallel()
	p := SendGrid()
	body := `[{"event":"processed","sg_event_id":"cHJvY2Vzc2VkLTEtQQ"},{"event":"delivered","sg_event_id":""}]`
	req := sgSigned(t, fixedNow.Unix(), body, sgGoPrivateKey)
	res, err := p.Verify(req, keysFor(t, p, sgGoPublicKey), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingEventID, "", req)
}
