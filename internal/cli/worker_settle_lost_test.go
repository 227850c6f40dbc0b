package cli

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestWorkerLeaseLostAfterAnAnswerNotLostIsUnsettled bounds the rule that
// TestWorkerCountsANackRetriedAfterALostAnswerSettled checks: FAILED_PRECONDITION after an
// earlier attempt is taken as settled only for a nack, and only when that attempt's answer
// may have been lost (UNAVAILABLE, a timeout, a cut). An ack that went through is told apart
// (ALREADY_ACKED), so an ack refused with FAILED_PRECONDITION on its retry is a lease really
// lost, its work to be done again; and a nack refused outright (RESOURCE_EXHAUSTED, ABORTED:
// nothing done) and then FAILED_PRECONDITION lost its lease without releasing it. --once must
// exit 1 for both.
func TestWorkerLeaseLostAfterAnAnswerNotLostIsUnsettled(t *testing.T) {
	lost := status.Error(codes.FailedPrecondition, "lease lost (it expired, or a nack or ack under it ended it)")
	run := func(t *testing.T, f hookverifyv1.InboxServiceServer, command string) {
		t.Helper()
		remote := startFakeInbox(t, f)
		wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", command))
		err, finished := wait(15 * time.Second)
		if !finished {
			t.Fatal("worker did not finish")
		}
		if err == nil {
			t.Errorf("worker --once returned nil (output %q); want the delivery reported unsettled", out.String())
		}
	}
	t.Run("ack: answer lost, then lease lost", func(t *testing.T) {
		run(t, &fakeInbox{ackErr: func(n int) error {
			if n == 1 {
				return status.Error(codes.Unavailable, "connection reset")
			}
			return lost
		}}, "true")
	})
	for _, first := range []codes.Code{codes.ResourceExhausted, codes.Aborted} {
		t.Run("nack: "+first.String()+", then lease lost", func(t *testing.T) {
			run(t, &nackAnswers{fakeInbox: &fakeInbox{}, answer: func(n int) error {
				if n == 1 {
					return status.Error(first, "refused")
				}
				return lost
			}}, "false")
		})
	}
}
