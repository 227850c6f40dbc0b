package cli

import (
	"context"
	"errors"
	"flag"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

func runInbox(ctx context.Context, e env, args []string) error {
	return subcommand(ctx, e, "inbox", args, map[string]func(context.Context, env, []string) error{
		"stats":   inboxStats,
		"lease":   inboxLease,
		"ack":     inboxAck,
		"nack":    inboxNack,
		"dead":    inboxDead,
		"requeue": inboxRequeue,
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
	visibility := fs.Duration("visibility", 30*time.Second, "lease duration")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Lease(ctx, &hookverifyv1.LeaseRequest{
			EndpointIds: f.endpoints, DedupeScopes: f.scopes, MaxDeliveries: int32(*max), VisibilityTimeout: durationpb.New(*visibility),
		})
	})
}

// leaseFlags identify one lease.
type leaseFlags struct{ id, token string }

func (l *leaseFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.id, "id", "", "inbox id (required)")
	fs.StringVar(&l.token, "lease", "", "lease token from 'inbox lease' (required)")
}

func (l *leaseFlags) check() error {
	if l.id == "" || l.token == "" {
		return errors.New("--id and --lease are required")
	}
	return nil
}

func inboxAck(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox ack")
	var r remoteFlags
	var l leaseFlags
	r.register(fs)
	l.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := l.check(); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Ack(ctx, &hookverifyv1.AckRequest{InboxId: l.id, LeaseToken: l.token})
	})
}

func inboxNack(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox nack")
	var r remoteFlags
	var l leaseFlags
	r.register(fs)
	l.register(fs)
	retryAfter := fs.Duration("retry-after", time.Minute, "when the delivery becomes leasable again")
	reason := fs.String("error", "", "why the work failed (kept with the delivery)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := l.check(); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Nack(ctx, &hookverifyv1.NackRequest{InboxId: l.id, LeaseToken: l.token, RetryAfter: durationpb.New(*retryAfter), Error: *reason})
	})
}

func inboxDead(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "inbox dead")
	var r remoteFlags
	var f filterFlags
	r.register(fs)
	f.register(fs)
	limit := fs.Int("limit", 100, "how many to list (1-1000)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).ListDeadLetters(ctx, &hookverifyv1.ListDeadLettersRequest{EndpointIds: f.endpoints, DedupeScopes: f.scopes, Limit: int32(*limit)})
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
		return errors.New("--id is required")
	}
	return r.call(ctx, e, func(ctx context.Context, c *client.Conn) (proto.Message, error) {
		return inboxClient(c).Requeue(ctx, &hookverifyv1.RequeueRequest{InboxId: *id})
	})
}
