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

// runAudit prints recorded administrative actions, a page at a time as inbox dead does: the
// page after --page-token, or with --all every page to the last. A page alone ended the
// listing before: going on from its last action's time skipped or repeated the actions
// sharing that time, so the trail could not be read whole.
func runAudit(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "audit")
	var r remoteFlags
	r.register(fs)
	endpoint := fs.String("endpoint", "", "only actions on this endpoint")
	since := fs.String("since", "", "only actions at or after this RFC 3339 time, or this long ago (e.g. 24h)")
	until := fs.String("until", "", "only actions before this RFC 3339 time, or this long ago")
	limit := fs.Int("limit", 100, "at most this many actions per page (up to 1000; a page of long ones holds fewer), oldest first")
	pageToken := fs.String("page-token", "", "list the page after the one whose nextPageToken this is (same --endpoint, --since and --until)")
	all := fs.Bool("all", false, "follow the pages to the last, printing each as a JSON document of its own")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "limit", *limit, 1, 1000); err != nil {
		return err
	}
	req := &hookverifyv1.ListAuditEventsRequest{EndpointId: *endpoint, PageSize: int32(*limit)}
	// Oldest first: a page that does not end the listing hides the latest actions, the ones an
	// operator usually looks for.
	more := "there are later actions"
	for _, t := range []struct {
		name, value string
		into        **timestamppb.Timestamp
	}{{"--since", *since, &req.StartTime}, {"--until", *until, &req.EndTime}} {
		var err error
		if *t.into, err = parseTimeOrAgo(t.name, t.value); err != nil {
			return err
		}
		if _, err := time.ParseDuration(t.value); err != nil || t.value == "" {
			continue
		}
		// A page token continues only the listing with the same times (the server refuses it
		// with others), and a duration ago is another time at each call: the next page is
		// asked for with the time it meant at the first, which the note gives.
		if *pageToken != "" {
			return usagef("%s %s with --page-token: a duration ago is another time at each call, and the token goes on only with the first page's; pass the RFC 3339 time printed with that page", t.name, t.value)
		}
		more += fmt.Sprintf(" (with --page-token, pass %s %s, the time %s meant here)", t.name, (*t.into).AsTime().UTC().Format(time.RFC3339Nano), t.value)
	}
	return printPages(ctx, e, &r, "audit", more, *all, *pageToken,
		func(ctx context.Context, c *client.Conn, token string) (*hookverifyv1.ListAuditEventsResponse, error) {
			req.PageToken = token
			return c.Admin.ListAuditEvents(ctx, req)
		})
}

// pagedAnswer is a page of a listing answer.
type pagedAnswer interface {
	proto.Message
	GetNextPageToken() string
}

// printPages prints a paged listing from the page after token (from the first when empty):
// that page, or with all every page from there to the last, each printed as it comes as a
// JSON document of its own, as inbox dead --all does, with its own deadline, so that a call
// that fails midway leaves the printed token to go on from with --page-token. A page that
// does not end the listing is followed, without all, by a note on standard error that more
// follow (stdout stays the JSON): one page looks complete otherwise.
func printPages[A pagedAnswer](ctx context.Context, e env, r *remoteFlags, command, more string, all bool, token string,
	page func(ctx context.Context, c *client.Conn, token string) (A, error)) error {
	conn, err := r.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	for {
		pageCtx, cancel := context.WithTimeout(ctx, r.timeout)
		resp, err := page(pageCtx, conn, token)
		cancel()
		if err != nil {
			return err
		}
		if err := printJSON(e.stdout, resp); err != nil {
			return err
		}
		if token = resp.GetNextPageToken(); token == "" {
			return nil
		}
		if !all {
			fmt.Fprintf(e.stderr, "hookverify %s: %s: --all lists every page, --page-token with the nextPageToken printed the next one\n", command, more)
			return nil
		}
	}
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
		return fmt.Errorf("%d secrets in force or scheduled (unreadableSecretIds above) are sealed under a master key the server does not hold: restart it with that key as --old-master-key-file and run rekey again, and until then keep every old key. If that key is lost, those secrets can never verify again (deliveries only they would verify get UNAVAILABLE): add the provider's current secret anew, then retire them. A secret the server's log names as not opening under a key it holds was damaged in the database: the same remedy", n)
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
