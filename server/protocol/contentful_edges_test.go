package protocol

import (
	"strconv"
	"testing"
)

// The toolkit's verifyRequest reads x-contentful-timestamp with JavaScript's parseInt, which
// takes an optional leading '+': "+<ms>" is read as <ms> (and signed as it), so such a request
// is accepted as @contentful/node-apps-toolkit accepts it; a '-' makes it negative, refused.
func TestContentfulTimestampWithPlusSignIsReadAsParseIntDoes(t *testing.T) {
	t.Parallel()
	p := Contentful()
	keys := keysFor(t, p, cfSecret)
	now := fixedNow.UnixMilli()
	sig := cfSig(cfSecret, "POST", cfPath, now, cfBody)
	plus := cfReq(cfURL, sig, now, cfBody, "X-Contentful-Timestamp", "+"+strconv.FormatInt(now, 10))
	res, err := p.Verify(plus, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", plus)
	minus := cfReq(cfURL, sig, now, cfBody, "X-Contentful-Timestamp", "-"+strconv.FormatInt(now, 10))
	res, err = p.Verify(minus, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonMissingTimestamp, "", minus)
}
