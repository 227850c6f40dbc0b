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
