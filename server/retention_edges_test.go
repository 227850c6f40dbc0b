package server_test

import (
	"context"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestRetentionZeroValueUsesTheDocumentedDefaults: a Retention left at its zero value sweeps
// as documented (claims kept 30 days, acked records 7 days, batches of 500), not with a window
// of zero that would forget every claim, and every acked record, at the first sweep, nor with
// a batch of zero that never finishes.
func TestRetentionZeroValueUsesTheDocumentedDefaults(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		secret, _ := e.setup(t, githubProvider, "defaults")
		first := e.accept(t, e.deliver(t, githubProvider, "defaults", "evt-done", secret))
		d := lease(t, e, 1, time.Minute)[0]
		if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
			t.Fatal(err)
		}
		sweep := func() (int64, int64) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			res, err := e.srv.SweepOnce(ctx, server.Retention{})
			if err != nil {
				t.Fatalf("SweepOnce(Retention{}) = %v", err)
			}
			return res.InboxDeleted, res.ClaimsDeleted
		}

		e.clock.Advance(6 * 24 * time.Hour) // within both defaults
		if inbox, claims := sweep(); inbox != 0 || claims != 0 {
			t.Fatalf("sweep 6 days on deleted %d records and %d claims; want none (defaults 7 and 30 days)", inbox, claims)
		}
		e.duplicate(t, e.deliver(t, githubProvider, "defaults", "evt-done", secret), first)

		e.clock.Advance(2 * 24 * time.Hour) // past the 7-day acked retention, within the window
		if inbox, claims := sweep(); inbox != 1 || claims != 0 {
			t.Fatalf("sweep 8 days on deleted %d records and %d claims; want the acked record only", inbox, claims)
		}
		e.duplicate(t, e.deliver(t, githubProvider, "defaults", "evt-done", secret), first)

		e.clock.Advance(23 * 24 * time.Hour) // past the 30-day dedupe window
		if _, claims := sweep(); claims != 1 {
			t.Fatalf("sweep 31 days on deleted %d claims; want the finished claim", claims)
		}
	})
}

// TestSweepOnceDeletesEveryBatch: SweepOnce goes on batch after batch until everything past
// retention is gone, not only until one kind (acked records, claims) runs short of a batch.
func TestSweepOnceDeletesEveryBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		secret, _ := e.setup(t, githubProvider, "batches")
		for _, id := range []string{"evt-1", "evt-2", "evt-3"} {
			e.accept(t, e.deliver(t, githubProvider, "batches", id, secret))
		}
		for _, d := range lease(t, e, 10, time.Minute) {
			if _, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
				t.Fatal(err)
			}
		}
		// Past the acked retention, within the dedupe window: records go, claims stay.
		e.clock.Advance(2 * 24 * time.Hour)
		r := server.Retention{DedupeWindow: 30 * 24 * time.Hour, AckedRetention: 24 * time.Hour, Batch: 1}
		if res, err := e.srv.SweepOnce(t.Context(), r); err != nil || res.InboxDeleted != 3 || res.ClaimsDeleted != 0 {
			t.Fatalf("SweepOnce = %+v, %v; want the 3 acked records deleted, a batch of 1 at a time, and no claim", res, err)
		}
	})
}
