package cli

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

func runInbox(ctx context.Context, e env, args []string) error {
	return subcommand(ctx, e, "inbox", args, map[string]func(context.Context, env, []string) error{
		"stats":   inboxStats,
		"lease":   inboxLease,
		"ack":     inboxAck,
		"nack":    inboxNack,
		"extend":  inboxExtend,
		"dead":    inboxDead,
		"requeue": inboxRequeue,
		"discard": inboxDiscard,
	})
}

func inboxClient(c *client.Conn) hookverifyv1.InboxServiceClient {
	return hookverifyv1.NewInboxServiceClient(c.GRPC())
}

// filterFlags select deliveries by endpoint or dedupe scope.
type filterFlags struct{ endpoints, scopes multiFlag }

func (f *filterFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.endpoints, "endpoint", "only this endpoint (repeatable)")
	fs.Var(&f.scopes, "scope", "only this dedupe scope (repeatable)")
}

func inboxStats(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox stats")
	var r remoteFlags
	r.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).GetInboxStats(ctx, &hookverifyv1.GetInboxStatsRequest{})
	})
}

func inboxLease(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox lease")
	var r remoteFlags
	var f filterFlags
	r.register(fs)
	f.register(fs)
	max := fs.Int("max", 1, "how many deliveries to lease (1-100)")
	visibility := fs.Duration("visibility", server.DefaultVisibility, "lease duration (1s-12h)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "max", *max, 1, 100); err != nil {
		return err
	}
	if err := inRange(e, "visibility", *visibility, time.Second, server.MaxVisibility); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Lease(ctx, &hookverifyv1.LeaseRequest{
			EndpointIds: f.endpoints, DedupeScopes: f.scopes, MaxDeliveries: int32(*max), VisibilityTimeout: durationpb.New(*visibility),
		})
	})
}

// inRange refuses a flag outside lo..hi as a usage error naming it: a count before it is
// narrowed to the API's int32, a duration the server would refuse.
func inRange[T int | int64 | time.Duration](e env, name string, v, lo, hi T) error {
	if v < lo || v > hi {
		fmt.Fprintf(e.stderr, "--%s %v: want %v to %v\n", name, v, lo, hi)
		return errUsage
	}
	return nil
}

// leaseFlags identify one lease.
type leaseFlags struct{ id, token string }

func (l *leaseFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.id, "id", "", "inbox id (required)")
	fs.StringVar(&l.token, "lease", "", "lease token from 'inbox lease' (required)")
}

func (l *leaseFlags) check() error {
	if l.id == "" || l.token == "" {
		return usagef("--id and --lease are required")
	}
	return nil
}

// maxAcksPerCall is the server's limit on one AckMany; inbox ack splits longer lists.
const maxAcksPerCall = 100

// inboxAck acks one lease with Ack, or several (repeated --id/--lease pairs, and every
// delivery of a lease printed by `inbox lease`, read with --leased) with AckMany, 100 a call.
// With several it prints every result and fails when any ack did not go through, so that a
// script sees a lost lease or a store failure rather than a partial success.
func inboxAck(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox ack")
	var r remoteFlags
	var ids, tokens multiFlag
	r.register(fs)
	fs.Var(&ids, "id", "inbox id (repeatable, each with its own --lease, in the same order)")
	fs.Var(&tokens, "lease", "lease token from 'inbox lease' (repeatable)")
	leased := fs.String("leased", "", "also ack every delivery of this file, the JSON 'inbox lease' printed ('-': standard input)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	acks, err := acksToSend(e, ids, tokens, *leased)
	if err != nil {
		return err
	}
	if len(acks) == 0 {
		// An empty lease (the inbox had nothing) acked is nothing to do, not a failure: a
		// `set -e` script that leases then acks must not stop on a quiet inbox. The output
		// stays the JSON of the results, none.
		fmt.Fprintf(e.stderr, "hookverify inbox ack: --leased %s holds no deliveries: nothing to ack\n", *leased)
		return printJSON(e.stdout, &hookverifyv1.AckManyResponse{})
	}
	if len(acks) == 1 && *leased == "" {
		return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
			resp, err := inboxClient(c).Ack(ctx, acks[0])
			if server.AlreadyAcked(err) {
				// The work is done (an ack re-run after a timeout, say): not a failure.
				fmt.Fprintf(e.stderr, "hookverify inbox ack: %s was already acked\n", acks[0].GetInboxId())
				return &hookverifyv1.AckResponse{}, nil
			}
			return resp, err
		})
	}
	all := &hookverifyv1.AckManyResponse{}
	err = r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		for chunk := range slices.Chunk(acks, maxAcksPerCall) {
			resp, err := inboxClient(c).AckMany(ctx, &hookverifyv1.AckManyRequest{Acks: chunk})
			if err != nil {
				if len(all.Results) == 0 {
					return nil, err
				}
				// The calls before this one went through: print their results, so that a
				// script retries only the rest.
				if perr := printJSON(e.stdout, all); perr != nil {
					return nil, perr
				}
				return nil, fmt.Errorf("the first %d of %d acks were answered (printed above), then: %w", len(all.Results), len(acks), err)
			}
			all.Results = append(all.Results, resp.GetResults()...)
		}
		return all, nil
	})
	if err != nil {
		return err
	}
	failed, done := 0, 0
	for _, res := range all.Results {
		switch {
		case res.GetAlreadyAcked():
			// Acked before (an ack re-run after a timeout, or another worker's): its work is
			// done, so it fails nothing; the result still says so.
			done++
		case codes.Code(res.GetCode()) != codes.OK:
			failed++
		}
	}
	if done > 0 {
		fmt.Fprintf(e.stderr, "hookverify inbox ack: %d of %d were already acked\n", done, len(all.Results))
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d acks failed (see each result's code and message; UNAVAILABLE ones may be retried)", failed, len(all.Results))
	}
	return nil
}

// acksToSend pairs the repeated --id and --lease flags in order and appends the deliveries of
// the --leased file, if any.
func acksToSend(e env, ids, tokens []string, leasedPath string) ([]*hookverifyv1.AckRequest, error) {
	if len(ids) != len(tokens) {
		return nil, usagef("%d --id but %d --lease: give each inbox id its lease token", len(ids), len(tokens))
	}
	var acks []*hookverifyv1.AckRequest
	for i, id := range ids {
		if id == "" || tokens[i] == "" {
			return nil, usagef("--id and --lease must not be empty")
		}
		acks = append(acks, &hookverifyv1.AckRequest{InboxId: id, LeaseToken: tokens[i]})
	}
	if leasedPath != "" {
		data, err := readBody(e, leasedPath)
		if err != nil {
			return nil, fmt.Errorf("--leased: %w", err)
		}
		var lease hookverifyv1.LeaseResponse
		if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &lease); err != nil {
			return nil, fmt.Errorf("--leased %s is not the JSON 'inbox lease' prints: %w", leasedPath, err)
		}
		for _, d := range lease.GetDeliveries() {
			if d.GetInboxId() == "" || d.GetLeaseToken() == "" {
				return nil, fmt.Errorf("--leased %s has a delivery without an inbox id or lease token", leasedPath)
			}
			acks = append(acks, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()})
		}
	}
	if len(acks) == 0 && leasedPath == "" {
		return nil, usagef("--id and --lease are required (or --leased FILE)")
	}
	return acks, nil
}

func inboxNack(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox nack")
	var r remoteFlags
	var l leaseFlags
	r.register(fs)
	l.register(fs)
	retryAfter := fs.Duration("retry-after", time.Minute, "when the delivery becomes leasable again (0-12h)")
	reason := fs.String("error", "", "why the work failed (kept with the delivery)")
	notAttempted := fs.Bool("not-attempted", false, "the work was not done for a reason of the worker's own (it is stopping): give the attempt back, so that the delivery cannot go to the dead letters")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "retry-after", *retryAfter, 0, server.MaxVisibility); err != nil {
		return err
	}
	if err := l.check(); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Nack(ctx, &hookverifyv1.NackRequest{InboxId: l.id, LeaseToken: l.token, RetryAfter: durationpb.New(*retryAfter), Error: *reason,
			NotAttempted: *notAttempted})
	})
}

// inboxExtend extends a lease taken with `inbox lease`, for work that takes longer than its
// visibility timeout: without it the delivery becomes leasable again while the work goes on,
// another worker takes it, and the work is done twice.
func inboxExtend(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox extend")
	var r remoteFlags
	var l leaseFlags
	r.register(fs)
	l.register(fs)
	visibility := fs.Duration("visibility", server.DefaultVisibility, "the lease lasts this long from now (1s-12h)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "visibility", *visibility, time.Second, server.MaxVisibility); err != nil {
		return err
	}
	if err := l.check(); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).ExtendLease(ctx, &hookverifyv1.ExtendLeaseRequest{InboxId: l.id, LeaseToken: l.token, VisibilityTimeout: durationpb.New(*visibility)})
	})
}

func inboxDead(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox dead")
	var r remoteFlags
	var f filterFlags
	r.register(fs)
	f.register(fs)
	limit := fs.Int("limit", 100, "how many to list per page (1-1000; a page of large deliveries holds fewer)")
	pageToken := fs.String("page-token", "", "list the page after the one whose nextPageToken this is (same --endpoint and --scope)")
	all := fs.Bool("all", false, "follow the pages to the last, printing each as a JSON document of its own")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange(e, "limit", *limit, 1, 1000); err != nil {
		return err
	}
	req := &hookverifyv1.ListDeadLettersRequest{EndpointIds: f.endpoints, DedupeScopes: f.scopes, Limit: int32(*limit), PageToken: *pageToken}
	// Each page printed as it comes, with its nextPageToken, rather than gathered into one
	// answer: thousands of dead letters with large bodies would be held in memory, and a call
	// that fails midway leaves the token to go on from with --page-token. Without --all, one
	// page, and a note on standard error when more follow, as endpoint list and audit say it.
	return printPages(ctx, e, &r, "inbox dead", "more dead deliveries follow", *all, *pageToken, func(ctx context.Context, c *client.Conn, token string) (*hookverifyv1.ListDeadLettersResponse, error) {
		req.PageToken = token
		return inboxClient(c).ListDeadLetters(ctx, req)
	})
}

func inboxRequeue(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox requeue")
	var r remoteFlags
	r.register(fs)
	id := fs.String("id", "", "inbox id of a dead delivery (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *id == "" {
		return usagef("--id is required")
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Requeue(ctx, &hookverifyv1.RequeueRequest{InboxId: *id})
	})
}

// inboxDiscard settles a dead delivery without running it (Discard).
func inboxDiscard(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox discard")
	var r remoteFlags
	r.register(fs)
	id := fs.String("id", "", "inbox id of a dead delivery that must never run (required)")
	reason := fs.String("reason", "", "why it must not run, kept with the delivery, logged and in the audit trail (required)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *id == "" || strings.TrimSpace(*reason) == "" {
		return usagef("--id and --reason are required")
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Discard(ctx, &hookverifyv1.DiscardRequest{InboxId: *id, Reason: *reason})
	})
}
