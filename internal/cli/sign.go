package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
)

// runSign prints the headers a provider would send with a body. It is a test tool: the secret
// is taken on the command line because it is a test secret, never a production one.
func runSign(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "sign")
	provider := fs.String("provider", "", "provider name (required)")
	var secrets multiFlag
	fs.Var(&secrets, "secret", "signing secret as the provider shows it (repeatable: one signature each, as during rotation)")
	bodyFile := fs.String("body", "", "file holding the raw body, or - for standard input (required)")
	id := fs.String("id", "", "event or message id, for protocols that send it in a header")
	ts := fs.String("timestamp", "", "signing time as unix seconds (even for providers that send milliseconds) or RFC 3339 (default: now)")
	method := fs.String("method", "POST", "HTTP method, for protocols that sign it")
	url := fs.String("url", "https://hooks.example.com/", "URL, for protocols that sign it")
	var options multiFlag
	fs.Var(&options, "option", "protocol option key=value of the endpoint to sign for (repeatable; generic-hmac, shared-token, ...)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *provider == "" || len(secrets) == 0 || *bodyFile == "" {
		return usagef("--provider, --secret and --body are required")
	}
	p, ok := protocol.Default().Lookup(*provider)
	if !ok {
		return usagef("--provider: unknown provider %q (see 'hookverify providers')", *provider)
	}
	opts, err := signOptions(p, options)
	if err != nil {
		return err
	}
	// Every flag checked before the body is read: from standard input, it may be typed.
	when, err := parseSignTime(*ts)
	if err != nil {
		return err
	}
	body, err := readBody(e, *bodyFile)
	if err != nil {
		return err
	}
	signed, err := protocol.SignDelivery(p, protocol.SignInput{Body: body, EventID: *id, Timestamp: when, Method: *method, URL: *url, Options: opts}, secrets)
	if errors.Is(err, protocol.ErrSignNeedsEventID) {
		return usagef("%v: give it with --id", err)
	}
	if errors.Is(err, protocol.ErrInvalidSecret) {
		// A --secret of a form the provider never shows (a Standard Webhooks secret that is not
		// whsec_ + base64): a value of the wrong form on the command line, exit 2, not a
		// failure. The protocol's reason never quotes the secret.
		return usagef("--secret: %v", err)
	}
	if err != nil {
		return err
	}
	if signed.URL != *url {
		// The protocol carries its credential in the URL (Mailchimp), or signs the URL without
		// the fragment a client never sends (Contentful): print the URL to call.
		fmt.Fprintf(e.stdout, "URL: %s\n", signed.URL)
	}
	for _, h := range signed.Headers {
		fmt.Fprintf(e.stdout, "%s: %s\n", h.Name, h.Value)
	}
	if !bytes.Equal(signed.Body, body) {
		// The protocol carries its signature in the body (Mailgun, Adyen): print the signed body.
		fmt.Fprintf(e.stdout, "\n%s\n", signed.Body)
	}
	return nil
}

// signOptions reads the --option flags as the endpoint's options, checked as the server checks
// them: an endpoint configured by options (generic-hmac's header, encoding, template)
// verifies only what is signed under the same ones, and a protocol without options would
// sign as if they were not given.
func signOptions(p *protocol.Protocol, flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	opts := make(map[string]string, len(flags))
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--option %q: want key=value", kv)
		}
		if k == server.PublicURLOption {
			return nil, usagef("--option %s: give the URL the provider calls as --url", k)
		}
		opts[k] = v
	}
	if p.ValidateOptions == nil {
		return nil, usagef("--option: provider %s takes no options", p.Name)
	}
	if err := p.ValidateOptions(opts); err != nil {
		return nil, usagef("--option: invalid options for provider %s: %v", p.Name, err)
	}
	return opts, nil
}

// maxSignSeconds bounds a --timestamp in unix seconds: 10^11 s is the year 5138, while a unix
// time in milliseconds passed it in 1973. Several providers (HubSpot, Recurly, Front,
// Contentful, Linear) put milliseconds in their headers, and a value copied from one of them
// would otherwise sign for a time tens of thousands of years ahead, which no server accepts.
const maxSignSeconds = 1e11

// parseSignTime reads --timestamp: a time, which each protocol writes in its own unit, given as
// unix seconds whatever that unit is, or RFC 3339 (with a fraction for a millisecond time).
func parseSignTime(s string) (time.Time, error) {
	if s == "" {
		return time.Now(), nil
	}
	var t time.Time
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		if secs >= maxSignSeconds {
			return time.Time{}, usagef("--timestamp %s: want unix seconds; this is %s", s, finerUnixTime(secs))
		}
		t = time.Unix(secs, 0)
	} else if t, err = time.Parse(time.RFC3339Nano, s); err != nil {
		return time.Time{}, usagef("--timestamp %q: want unix seconds or RFC 3339", s)
	}
	if t.Before(time.Unix(0, 0)) {
		// No protocol writes a time before 1970; refused here as the bad value it is.
		return time.Time{}, usagef("--timestamp %s: want a time at or after 1970", s)
	}
	return t, nil
}

// finerUnixTime says what a unix time too large for seconds is in the coarsest finer unit that
// makes it a time before the year 5138 (nanoseconds always do), as RFC 3339 to give instead.
func finerUnixTime(v int64) string {
	name, per := "nanoseconds", int64(1e9)
	if v/1e3 < maxSignSeconds {
		name, per = "milliseconds", 1e3
	} else if v/1e6 < maxSignSeconds {
		name, per = "microseconds", 1e6
	}
	t := time.Unix(v/per, v%per*(1e9/per)).UTC()
	return fmt.Sprintf("unix %s, for which give --timestamp %s", name, t.Format(time.RFC3339Nano))
}
