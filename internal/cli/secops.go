package cli

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/secretbox"
)

// runAudit prints recorded administrative actions.
func runAudit(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "audit")
	var r remoteFlags
	r.register(fs)
	endpoint := fs.String("endpoint", "", "only actions on this endpoint")
	since := fs.String("since", "", "only actions at or after this RFC 3339 time, or this long ago (e.g. 24h)")
	until := fs.String("until", "", "only actions before this RFC 3339 time, or this long ago")
	limit := fs.Int("limit", 100, "at most this many actions (up to 1000), oldest first")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "limit", *limit, 1, 1000); err != nil {
		return err
	}
	req := &hookverifyv1.ListAuditEventsRequest{EndpointId: *endpoint, PageSize: int32(*limit)}
	var err error
	if req.StartTime, err = parseTimeOrAgo("--since", *since); err != nil {
		return err
	}
	if req.EndTime, err = parseTimeOrAgo("--until", *until); err != nil {
		return err
	}
	var got int
	err = r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		resp, err := c.Admin.ListAuditEvents(ctx, req)
		got = len(resp.GetEvents())
		return resp, err
	})
	if err == nil && got == *limit {
		// Oldest first: a full page hides the latest actions, the ones an operator usually
		// looks for. Say so rather than let the listing pass for complete.
		fmt.Fprintf(e.stderr, "hookverify audit: showing the oldest %d actions; there may be later ones: narrow --since/--until or raise --limit (up to 1000)\n", got)
	}
	return err
}

// parseTimeOrAgo reads an RFC 3339 time or a duration before now.
func parseTimeOrAgo(flagName, value string) (*timestamppb.Timestamp, error) {
	if ago, err := time.ParseDuration(value); err == nil && value != "" {
		if ago < 0 {
			return nil, usagef("%s: a duration means that long ago and must not be negative", flagName)
		}
		return timestamppb.New(time.Now().Add(-ago)), nil
	}
	if value == "" {
		return nil, nil
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		// Both forms named: "1d" or "2026-12-04" is a likely first try, and the flag takes either.
		return nil, usagef("%s %q: want an RFC 3339 time such as 2026-12-31T23:59:00Z or a duration ago such as 24h or 30m", flagName, value)
	}
	return timestamppb.New(t), nil
}

// runRekey moves every secret to the server's current master key, page by page, and reports
// what it did. The server must be started with the new key as --master-key-file and the old
// one as --old-master-key-file; the old key can go once this reports nothing remaining.
func runRekey(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "rekey")
	var r remoteFlags
	r.register(fs)
	page := fs.Int("page", 100, "secrets per call (1-1000)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "page", *page, 1, 1000); err != nil {
		return err
	}
	// r.dial, like every other remote command: the token and TLS flags matter most here, on
	// a production server that requires callers to authenticate.
	conn, err := r.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	total := &hookverifyv1.RekeySecretsResponse{}
	for {
		callCtx, cancel := context.WithTimeout(ctx, r.timeout)
		resp, err := conn.Admin.RekeySecrets(callCtx, &hookverifyv1.RekeySecretsRequest{MaxSecrets: int32(*page)})
		cancel()
		if err != nil {
			return err
		}
		total.CurrentKeyId = resp.GetCurrentKeyId()
		total.Resealed += resp.GetResealed()
		total.Remaining = resp.GetRemaining()
		total.UnreadableSecretIds = resp.GetUnreadableSecretIds()
		total.EndedUnreadableSecretIds = resp.GetEndedUnreadableSecretIds()
		if resp.GetRemaining() == 0 || resp.GetResealed() == 0 {
			break
		}
	}
	if err := printJSON(e.stdout, total); err != nil {
		return err
	}
	if n := len(total.GetEndedUnreadableSecretIds()); n > 0 {
		// Ended, they never authenticate again: their lost key loses nothing, and they must
		// not hold up the rotation for ever (nothing can reseal or delete them).
		fmt.Fprintf(e.stderr, "%d ended secrets (endedUnreadableSecretIds above) are sealed under a master key the server does not hold; they can never authenticate again and need nothing\n", n)
	}
	if n := len(total.GetUnreadableSecretIds()); n > 0 {
		return fmt.Errorf("%d secrets in force or scheduled (unreadableSecretIds above) are sealed under a master key the server does not hold: restart it with that key as --old-master-key-file and run rekey again, and until then keep every old key. If that key is lost, those secrets can never verify again (deliveries only they would verify get UNAVAILABLE): add the provider's current secret anew, then retire them", n)
	}
	if total.GetRemaining() > 0 {
		return fmt.Errorf("%d secrets remain under older keys (another rekey running at the same time?); run it again", total.GetRemaining())
	}
	fmt.Fprintf(e.stderr, "every secret is under %s; the old master keys can be removed from the configuration\n", total.GetCurrentKeyId())
	return nil
}

// secretFingerprint computes a secret's fingerprint locally, to compare with the one
// `hookverify secret list` shows, without sending the secret anywhere.
func secretFingerprint(_ context.Context, e env, args []string) error {
	fs := newFlags(e, "secret fingerprint")
	endpoint := fs.String("endpoint", "", "endpoint id the secret belongs to (required: it salts the fingerprint)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *endpoint == "" {
		return usagef("--endpoint is required")
	}
	secret, err := readSecret(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(e.stdout, secretbox.Fingerprint(*endpoint, []byte(secret)))
	return err
}
