package protocol

import "testing"

// RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
// Only '=' may follow the first '=': a token character after the padding makes the token
// malformed, as a secret and in the Authorization header, even when it is the configured one.
func TestBearerTokenNothingButPaddingAfterEquals(t *testing.T) {
	t.Parallel()
	p := BearerToken()
	for _, s := range []string{"tok==~", "tok=~", "tok=a", "tok=/"} {
		if _, err := p.ParseSecret(s); err == nil {
			t.Errorf("ParseSecret(%q) accepted", s)
		}
		req := basicReq("Bearer "+s, basicBody)
		res, err := p.Verify(req, keysFor(t, p, bearerSecret), Params{Now: fixedNow})
		checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
	}
	req := basicReq("Bearer tok==", basicBody)
	res, err := p.Verify(req, keysFor(t, p, "tok=="), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
}
