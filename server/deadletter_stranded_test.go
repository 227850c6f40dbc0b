package server_test

import (
	"context"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestStrandedLastLeaseIsDeadLettered: a worker leases a delivery on its last attempt and
// dies; no worker leases that endpoint any more (all stopped, or filtered to others). Lease
// alone dead-letters such an expired last lease, and only a lease whose filter matches it, so
// the delivery stayed leased for ever: never listed as a dead letter, neither requeueable nor
// discardable. The server's dead-lettering step must move it, with the same last error Lease
// writes, counted as a lease expiry (cause lease_expired), not as a lowered limit.
func TestStrandedLastLeaseIsDeadLettered(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1; o.Metrics = metrics })
		acceptSome(t, e, "work", 1)
		d := lease(t, e, 1, time.Minute)
		if len(d) != 1 {
			t.Fatalf("leased %d, want 1", len(d))
		}
		// The worker dies; its lease runs out, and nobody leases "work" again.
		e.clock.Advance(2 * time.Minute)
		if n, err := e.srv.DeadLetterExhausted(t.Context(), e.store); err != nil || n != 1 {
			t.Fatalf("DeadLetterExhausted = %d, %v; want the expired last lease moved", n, err)
		}
		if n, err := e.srv.DeadLetterExhausted(t.Context(), e.store); err != nil || n != 0 {
			t.Fatalf("second DeadLetterExhausted = %d, %v; want nothing left to move", n, err)
		}
		dead, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
		if err != nil {
			t.Fatalf("ListDeadLetters: %v", err)
		}
		if got := dead.GetDeliveries(); len(got) != 1 || got[0].GetInboxId() != d[0].GetInboxId() || got[0].GetLastError() != "lease expired" {
			t.Fatalf("dead letters %v, want %s with last error %q", got, d[0].GetInboxId(), "lease expired")
		}
		wantMetrics(t, e.srv, `hookverify_inbox_dead_lettered_total{cause="lease_expired"} 1`,
			`hookverify_inbox_dead_lettered_total{cause="max_attempts_lowered"} 0`,
			`hookverify_inbox_lease_expiries_total 1`)
		// The operator can act on it now.
		if _, err := e.inbox.Requeue(t.Context(), &hookverifyv1.RequeueRequest{InboxId: d[0].GetInboxId()}); err != nil {
			t.Fatalf("Requeue: %v", err)
		}
	})
}

// TestRunningServerDeadLettersStrandedLastLease: the same stranded last lease on a running
// server is listed as a dead letter soon after its lease ends (at a retention sweep), not only
// after a restart or an hour.
func TestRunningServerDeadLettersStrandedLastLease(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		ctx, cancel := context.WithCancel(t.Context())
		loopDone := make(chan struct{})
		go func() {
			defer close(loopDone)
			e.srv.RunRetention(ctx, server.Retention{Interval: 10 * time.Millisecond})
		}()
		t.Cleanup(func() { cancel(); <-loopDone })
		acceptSome(t, e, "work", 1)
		if d := lease(t, e, 1, time.Minute); len(d) != 1 {
			t.Fatalf("leased %d, want 1", len(d))
		}
		e.clock.Advance(2 * time.Minute)
		waitDeadLetters(t, e, 1, 10*time.Second, "an expired last lease nobody leases again was not dead-lettered by the running server")
	})
}
