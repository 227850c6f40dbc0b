package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestNackNotAttemptedKeepsTheLastAttempt: a worker stopping for a deploy nacks the delivery it
// was running, or one leased as it stopped. On the delivery's last attempt that nack moved it
// to the dead letters, though nothing about it had failed. With not_attempted the attempt is
// given back: the delivery is leased again with the same attempt number, and a real failure
// then still dead-letters it.
func TestNackNotAttemptedKeepsTheLastAttempt(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		acceptSome(t, e, "work", 1)

		d := lease(t, e, 1, time.Minute)[0]
		nack, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
			RetryAfter: durationpb.New(0), Error: "not run: the worker was stopping", NotAttempted: true})
		if err != nil || nack.GetDeadLettered() {
			t.Fatalf("Nack not_attempted on the last attempt = %v, %v; want given back, not dead", nack, err)
		}
		again := lease(t, e, 1, time.Minute)
		if len(again) != 1 || again[0].GetAttempts() != 1 || again[0].GetLastError() != "not run: the worker was stopping" {
			t.Fatalf("lease after giving back = %v; want the delivery on attempt 1 again", again)
		}
		// The old lease is gone: giving back with it is refused as any stale lease is.
		_, err = e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), NotAttempted: true})
		wantCode(t, err, codes.FailedPrecondition)

		nack, err = e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: again[0].GetLeaseToken(), Error: "failed"})
		if err != nil || !nack.GetDeadLettered() {
			t.Fatalf("a plain Nack on the last attempt = %v, %v; want dead-lettered", nack, err)
		}
	})
}

// TestNacksCountedByOutcome: nacks were counted only when they dead-lettered, so a worker
// failing every delivery (retried later) showed in no counter until the last attempts, and one
// giving back every delivery it leased (a worker stopping in a loop: no attempt spent) in
// none at all. Each nack now counts by its outcome; one refused (a stale lease) does not.
func TestNacksCountedByOutcome(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts, o.Metrics = 2, server.NewMetrics() })
		acceptSome(t, e, "work", 1)
		wantMetrics(t, e.srv, `hookverify_inbox_nacks_total{outcome="retry"} 0`, `hookverify_inbox_nacks_total{outcome="given_back"} 0`,
			`hookverify_inbox_nacks_total{outcome="dead_lettered"} 0`)
		nack := func(notAttempted bool) *hookverifyv1.InboxDelivery {
			t.Helper()
			d := lease(t, e, 1, time.Minute)
			if len(d) != 1 {
				t.Fatalf("leased %d, want 1", len(d))
			}
			if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d[0].GetInboxId(), LeaseToken: d[0].GetLeaseToken(),
				RetryAfter: durationpb.New(0), Error: "failed", NotAttempted: notAttempted}); err != nil {
				t.Fatalf("Nack: %v", err)
			}
			return d[0]
		}
		first := nack(false) // attempt 1 of 2: retried
		nack(true)           // attempt 2, given back unrun
		nack(false)          // attempt 2 again: the last, dead-lettered
		_, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: first.GetInboxId(), LeaseToken: first.GetLeaseToken()})
		wantCode(t, err, codes.FailedPrecondition)
		wantMetrics(t, e.srv, `hookverify_inbox_nacks_total{outcome="retry"} 1`, `hookverify_inbox_nacks_total{outcome="given_back"} 1`,
			`hookverify_inbox_nacks_total{outcome="dead_lettered"} 1`, `hookverify_inbox_dead_lettered_total{cause="nack"} 1`)
	})
}
