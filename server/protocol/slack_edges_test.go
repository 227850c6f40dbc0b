package protocol

import (
	"strconv"
	"testing"
)

// Slack's SDKs sign "v0:{X-Slack-Request-Timestamp}:{body}" with the header string verbatim, so
// a timestamp written with a leading zero authenticates as written, and a signature computed
// over the canonical form of that timestamp does not.
func TestSlackSignsTimestampHeaderVerbatim(t *testing.T) {
	t.Parallel()
	p := Slack()
	keys := keysFor(t, p, slackSecret)
	raw := "0" + strconv.FormatInt(fixedNow.Unix(), 10)
	canonical := strconv.FormatInt(fixedNow.Unix(), 10)

	verbatim := slackRequest(raw, slackSig(slackSecret, raw, slackBody), slackBody)
	res, err := p.Verify(verbatim, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", verbatim)
	if res.EventID != "Ev0PV52K21" {
		t.Fatalf("EventID = %q, want Ev0PV52K21", res.EventID)
	}

	overCanonical := slackRequest(raw, slackSig(slackSecret, canonical, slackBody), slackBody)
	res, err = p.Verify(overCanonical, keys, Params{Now: fixedNow})
	checkOutcome(t, res, err, ReasonSignatureMismatch, "", overCanonical)
}
