package protocol

import (
	"testing"
	"time"
)

// Without an endpoint tolerance, Mailgun's default is 8.5 hours (its retries run "during 8
// hours": 5 min, 10 min, 15 min, 1 h, 2 h, 4 h): a delivery signed 8 h 20 min ago is accepted,
// one signed 8 h 30 min and a second ago is not.
func TestMailgunDefaultToleranceIsEightAndAHalfHours(t *testing.T) {
	t.Parallel()
	p := Mailgun()
	keys := keysFor(t, p, mailgunKey)
	now := fixedNow.Unix()
	req := &Request{Body: mailgunSigned(t, now-8*3600-20*60, mailgunToken, mailgunKey)}
	res, err := p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
	req = &Request{Body: mailgunSigned(t, now-int64((8*time.Hour+30*time.Minute)/time.Second)-1, mailgunToken, mailgunKey)}
	res, err = p.Verify(req, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonTimestampOutOfTolerance, "", req)
}
