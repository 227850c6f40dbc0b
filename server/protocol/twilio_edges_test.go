package protocol

import "testing"

// The bodySHA256 query value is read percent-decoded, as twilio-python's parse_qs and
// twilio-node's searchParams.get read it: a URL that escapes a hex digit of the hash still
// carries the body's hash.
func TestTwilioBodyHashParamIsPercentDecoded(t *testing.T) {
	t.Parallel()
	p := Twilio()
	escaped := "%" + hexByte(twilioJSONHash[0]) + twilioJSONHash[1:]
	u := twilioURL + "&bodySHA256=" + escaped
	req := twilioRequest(u, twilioRawSig(u, twilioToken), twilioJSON)
	res, err := p.Verify(req, keysFor(t, p, twilioToken), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
}

func hexByte(c byte) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[c>>4], digits[c&0xF]})
}
