package protocol

import (
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"strconv"
	"time"
)

// Builtin returns a fresh instance of every protocol hookverify ships, in no particular order.
// Adding a provider is one line here plus its own file.
func Builtin() []*Protocol {
	return []*Protocol{
		Stripe(),
		GitHub(),
		StandardWebhooks(),
		CircleCI(),
		WorkOS(),
		Razorpay(),
		WooCommerce(),
		LemonSqueezy(),
		Paddle(),
		Linear(),
		Intercom(),
		Xero(),
		Meta(),
		Dropbox(),
		Bitbucket(),
		CoinbaseCommerce(),
		Sentry(),
		Typeform(),
		Calendly(),
		PagerDuty(),
		Shopify(),
		Resend(),
		Clerk(),
		Svix(),
		Twilio(),
		Square(),
		HubSpot(),
		Mailgun(),
		Adyen(),
		Plaid(),
		GitLab(),
		GenericHMAC(),
		BasicAuth(),
		BearerToken(),
		SharedToken(),
		Postmark(),
		Mandrill(),
		DocuSign(),
		Box(),
		Contentful(),
		Zendesk(),
		GoCardless(),
		Mux(),
		Persona(),
		Checkout(),
		LaunchDarkly(),
		Segment(),
		ClickUp(),
		Webflow(),
		CalCom(),
		Nylas(),
		HelpScout(),
		Trello(),
		Asana(),
		Onfido(),
		Gitea(),
		Sanity(),
		FrontApp(),
		Recurly(),
		HelloSign(),
		Braintree(),
		Slack(),
		Zoom(),
		Twitch(),
		Discord(),
		Telnyx(),
		SendGrid(),
		Okta(),
		Mailchimp(),
		Vercel(),
	}
}

// Default returns a registry of the Builtin protocols. It panics only if two built-in
// protocols share a name or one lacks a function, which is a programming error caught by tests.
func Default() *Registry {
	r, err := NewRegistry(Builtin()...)
	if err != nil {
		panic("protocol: built-in registry is inconsistent: " + err.Error())
	}
	return r
}

// ErrInvalidSecret is wrapped by every ParseSecret error, so callers can tell a secret the
// provider would never display from other failures. The messages never contain the secret.
var ErrInvalidSecret = errors.New("invalid secret")

// invalidSecret builds a ParseSecret error; the reason must not quote the secret.
func invalidSecret(reason string) error {
	return fmt.Errorf("%w: %s", ErrInvalidSecret, reason)
}

// effectiveTolerance is p.Tolerance, or def when the caller left it unset (zero or negative):
// a zero window would reject nearly every delivery, so it is taken to mean "not configured".
func effectiveTolerance(p Params, def time.Duration) time.Duration {
	if p.Tolerance <= 0 {
		return def
	}
	return p.Tolerance
}

// checkTimestamp accepts the signed unix time ts when it lies within tol of now in either
// direction, boundaries included (|now-ts| == tol is accepted, as in stripe-go and the Standard
// Webhooks libraries). The detail states the distance in whole seconds, rounded up.
func checkTimestamp(ts int64, now time.Time, tol time.Duration) error {
	lo := now.Add(-tol)
	loSec := lo.Unix()
	if lo.Nanosecond() != 0 {
		loSec++ // ts is whole seconds: the first acceptable second is the ceiling of now-tol
	}
	hiSec := now.Add(tol).Unix()
	nowSec := now.Unix()
	switch {
	case ts < loSec:
		// uint64 arithmetic: the difference of two int64s always fits.
		age := uint64(nowSec) - uint64(ts)
		if now.Nanosecond() != 0 && age < ^uint64(0) {
			age++
		}
		return Reject(ReasonTimestampOutOfTolerance,
			"timestamp is %ds old, more than the %s tolerance", age, formatTolerance(tol))
	case ts > hiSec:
		ahead := uint64(ts) - uint64(nowSec)
		return Reject(ReasonTimestampOutOfTolerance,
			"timestamp is %ds in the future, more than the %s tolerance", ahead, formatTolerance(tol))
	}
	return nil
}

// formatTolerance prints whole-second tolerances as "300s" rather than "5m0s".
func formatTolerance(tol time.Duration) string {
	if tol%time.Second == 0 {
		return strconv.FormatInt(int64(tol/time.Second), 10) + "s"
	}
	return tol.String()
}

// parseUnixSeconds parses a signed timestamp: one to nineteen ASCII digits, no sign, no
// spaces, fitting an int64. Messages are signed over the decimal form of the parsed value, which
// is what the official Go SDKs compute.
func parseUnixSeconds(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 19 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// decodeLowerHex decodes s when it is exactly size bytes written as lowercase hex, the form
// every hex-signing provider sends. Uppercase is refused so that no two header strings carry
// the same signature.
func decodeLowerHex(s string, size int) ([]byte, bool) {
	if len(s) != 2*size {
		return nil, false
	}
	out := make([]byte, size)
	for i := 0; i < size; i++ {
		hi, ok1 := lowerHexNibble(s[2*i])
		lo, ok2 := lowerHexNibble(s[2*i+1])
		if !ok1 || !ok2 {
			return nil, false
		}
		out[i] = hi<<4 | lo
	}
	return out, true
}

func lowerHexNibble(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// decodeStdBase64 decodes s when it is exactly size bytes in padded standard base64 with
// canonical (zero) trailing bits. Strict decoding and the exact length make the encoding
// unique, so no altered header string decodes to the same signature.
func decodeStdBase64(s string, size int) ([]byte, bool) {
	if len(s) != base64.StdEncoding.EncodedLen(size) {
		return nil, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '\r' || s[i] == '\n' { // the decoder would skip them
			return nil, false
		}
	}
	out, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil || len(out) != size {
		return nil, false
	}
	return out, true
}

// matchKey MACs the message once per key, in order, and returns the id of the first key whose
// MAC equals one of sigs (compared in constant time). Keys without material are skipped: an
// empty HMAC key is public knowledge and must never authenticate anything.
func matchKey(keys []Key, sigs [][]byte, newHash func() hash.Hash, writeMessage func(hash.Hash)) (string, bool) {
	if len(sigs) == 0 {
		return "", false
	}
	for _, k := range keys {
		if len(k.Material) == 0 {
			continue
		}
		mac := hmac.New(newHash, k.Material)
		writeMessage(mac)
		sum := mac.Sum(nil)
		for _, sig := range sigs {
			if hmac.Equal(sum, sig) {
				return k.ID, true
			}
		}
	}
	return "", false
}

// rejectNoMatch is the rejection when no signature matched: a malformed signature explains
// the failure better than a mismatch, and an endpoint without keys says so.
func rejectNoMatch(header string, malformed int, keys []Key) error {
	if malformed > 0 {
		return Reject(ReasonMalformedSignature,
			"%s has %d signature(s) that are not well-formed, and no well-formed one matches", header, malformed)
	}
	for _, k := range keys {
		if len(k.Material) > 0 {
			return Reject(ReasonSignatureMismatch, "no signature in %s matches a signing key", header)
		}
	}
	return Reject(ReasonSignatureMismatch, "no signing key is configured, so no signature in %s can match", header)
}

// hmacSum returns the HMAC under key of the message written by write.
func hmacSum(newHash func() hash.Hash, key []byte, write func(hash.Hash)) []byte {
	mac := hmac.New(newHash, key)
	write(mac)
	return mac.Sum(nil)
}
