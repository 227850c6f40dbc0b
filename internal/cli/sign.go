package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

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
	ts := fs.String("timestamp", "", "signing time as unix seconds or RFC 3339 (default: now)")
	method := fs.String("method", "POST", "HTTP method, for protocols that sign it")
	url := fs.String("url", "https://hooks.example.com/", "URL, for protocols that sign it")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *provider == "" || len(secrets) == 0 || *bodyFile == "" {
		return errors.New("--provider, --secret and --body are required")
	}
	p, ok := protocol.Default().Lookup(*provider)
	if !ok {
		return fmt.Errorf("unknown provider %q", *provider)
	}
	body, err := readBody(e, *bodyFile)
	if err != nil {
		return err
	}
	when, err := parseSignTime(*ts)
	if err != nil {
		return err
	}
	signed, err := protocol.SignDelivery(p, protocol.SignInput{Body: body, EventID: *id, Timestamp: when, Method: *method, URL: *url}, secrets)
	if errors.Is(err, protocol.ErrSignNeedsEventID) {
		return fmt.Errorf("%w: give it with --id", err)
	}
	if err != nil {
		return err
	}
	if signed.URL != *url {
		// The protocol carries its credential in the URL (Mailchimp): print the URL to call.
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

func parseSignTime(s string) (time.Time, error) {
	if s == "" {
		return time.Now(), nil
	}
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(secs, 0), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--timestamp %q: want unix seconds or RFC 3339", s)
	}
	return t, nil
}
