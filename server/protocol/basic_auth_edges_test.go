package protocol

import (
	"strings"
	"testing"
)

// Basic credentials are standard base64 (RFC 7617 section 2, base64 as in RFC 4648 section 4),
// not the URL-safe alphabet: a password whose encoding holds '+' and '/' authenticates.
func TestBasicAuthCredentialsUseStandardBase64Alphabet(t *testing.T) {
	t.Parallel()
	p := BasicAuth()
	const secret = "hooks:>>>???"
	auth := basicOf(secret)
	if !strings.ContainsAny(auth, "+/") {
		t.Fatalf("%q does not exercise the standard alphabet", auth)
	}
	req := basicReq(auth, basicBody)
	res, err := p.Verify(req, keysFor(t, p, secret), Params{Now: fixedNow})
	checkOutcome(t, res, err, 0, "k0", req)
}

// Only the canonical encoding of the credentials is taken: non-zero trailing bits before the
// padding, or a line break inside the base64 (which Go's decoder would skip), decode to the
// same user:password but are refused as malformed, so no two Authorization values carry the
// same credentials.
func TestBasicAuthNonCanonicalBase64Refused(t *testing.T) {
	t.Parallel()
	p := BasicAuth()
	const secret = "hooks:pw12"
	canonical := basicOf(secret) // Basic aG9va3M6cHcxMg==
	for _, tc := range []struct{ name, auth string }{
		{name: "non-zero trailing bits", auth: strings.Replace(canonical, "Mg==", "Mh==", 1)},
		{name: "line break inside", auth: strings.Replace(canonical, "aG9va3M6", "aG9va3M6\n", 1)},
		{name: "carriage return inside", auth: strings.Replace(canonical, "aG9va3M6", "aG9va3M6\r", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.auth == canonical {
				t.Fatal("replacement did not apply")
			}
			req := basicReq(tc.auth, basicBody)
			res, err := p.Verify(req, keysFor(t, p, secret), Params{Now: fixedNow})
			checkOutcome(t, res, err, ReasonMalformedSignature, "", req)
		})
	}
}
