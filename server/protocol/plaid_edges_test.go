package protocol

import (
	"strconv"
	"strings"
	"testing"
)

// TestPlaidKeyIsExpiredFromItsExpiredAtSecond: a JWK's expired_at is the moment the key
// stopped being valid (Plaid's /webhook_verification_key/get returns expired_at null for a
// current key, providers.md), so at that very second it no longer verifies; one second
// before, it still does.
func TestPlaidKeyIsExpiredFromItsExpiredAtSecond(t *testing.T) {
	t.Parallel()
	p := Plaid()
	now := fixedNow.Unix()
	req := plaidRequest(plaidRaw(t, plaidTestPrivate, plaidHeaderJSON, plaidClaims(now, plaidTestBody)), plaidTestBody)
	expiring := func(at int64) []Key {
		return keysFor(t, p, strings.Replace(plaidTestPublic, `"expired_at":null`, `"expired_at":`+strconv.FormatInt(at, 10), 1))
	}
	res, err := p.Verify(req, expiring(now), Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", req)
	res, err = p.Verify(req, expiring(now+1), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
}
