package protocol

import (
	"net/url"
	"testing"
)

// A signed mandrill_events holding only whitespace around "[]" is still the empty batch of
// Mandrill's URL check: answered as a handshake, nothing stored.
func TestMandrillEmptyBatchWithWhitespaceIsHandshake(t *testing.T) {
	t.Parallel()
	p := Mandrill()
	form := url.Values{"mandrill_events": {" []\n"}}
	req := mandrillReq("POST", mandrillURL, mandrillSig(mandrillKey, mandrillURL, form), form.Encode())
	res, err := p.Verify(req, keysFor(t, p, mandrillKey), Params{Now: fixedNow})
	if err != nil || res.Handshake == nil || res.Handshake.Status != 200 || res.EventID != "" {
		t.Fatalf("got %+v, %v; want a 200 handshake and no event", res, err)
	}
}
