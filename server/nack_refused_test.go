package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestRefusedGiveBackIsNotCounted: TestNacksCountedByOutcome refuses only a plain nack; a
// give-back (not_attempted) with a stale lease, as a worker stopping after its lease ran out
// sends, is refused too and must not count as given_back, nor as any other outcome.
func TestRefusedGiveBackIsNotCounted(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts, o.Metrics = 2, server.NewMetrics() })
		acceptSome(t, e, "work", 1)
		d := lease(t, e, 1, time.Minute)
		if len(d) != 1 {
			t.Fatalf("leased %d, want 1", len(d))
		}
		if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d[0].GetInboxId(), LeaseToken: d[0].GetLeaseToken(),
			RetryAfter: durationpb.New(0), Error: "not run", NotAttempted: true}); err != nil {
			t.Fatalf("give back: %v", err)
		}
		// The same lease again: gone, refused.
		_, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d[0].GetInboxId(), LeaseToken: d[0].GetLeaseToken(),
			RetryAfter: durationpb.New(0), Error: "not run", NotAttempted: true})
		wantCode(t, err, codes.FailedPrecondition)
		// A lease unknown altogether.
		_, err = e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d[0].GetInboxId(), LeaseToken: "no-such-lease", NotAttempted: true})
		if err == nil {
			t.Fatal("give back with an unknown lease token succeeded")
		}
		wantMetrics(t, e.srv, `hookverify_inbox_nacks_total{outcome="given_back"} 1`, `hookverify_inbox_nacks_total{outcome="retry"} 0`,
			`hookverify_inbox_nacks_total{outcome="dead_lettered"} 0`)
	})
}
