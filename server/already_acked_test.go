package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestAckOfAnAckedDeliverySaysSo: an Ack whose answer is lost is retried, and the retry met
// FAILED_PRECONDITION "lease lost (expired, or already acked); the delivery may be with another
// worker", so the worker could not tell its own finished work from a delivery another worker
// holds, and reported it unsettled. The status stays FAILED_PRECONDITION, with an ErrorInfo
// (ALREADY_ACKED) when the delivery was acked, and AckMany's result says it too; a lease lost
// to another worker that has not acked carries neither.
func TestAckOfAnAckedDeliverySaysSo(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		acceptSome(t, e, "work", 2)
		leased := lease(t, e, 2, time.Minute)
		first, second := leased[0], leased[1]
		ack := func(d *hookverifyv1.InboxDelivery, token string) error {
			_, err := e.inbox.Ack(t.Context(), &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: token})
			return err
		}
		if err := ack(first, first.GetLeaseToken()); err != nil {
			t.Fatalf("Ack: %v", err)
		}
		err := ack(first, first.GetLeaseToken())
		wantCode(t, err, codes.FailedPrecondition)
		if !server.AlreadyAcked(err) {
			t.Fatalf("the same Ack again = %v; want the ALREADY_ACKED ErrorInfo", status.Convert(err).Proto())
		}
		many, err := e.inbox.AckMany(t.Context(), &hookverifyv1.AckManyRequest{Acks: []*hookverifyv1.AckRequest{
			{InboxId: first.GetInboxId(), LeaseToken: first.GetLeaseToken()},
			{InboxId: second.GetInboxId(), LeaseToken: "lease_not_this_one"},
		}})
		if err != nil {
			t.Fatalf("AckMany: %v", err)
		}
		if r := many.GetResults()[0]; r.GetCode() != int32(codes.FailedPrecondition) || !r.GetAlreadyAcked() {
			t.Errorf("AckMany result of an acked delivery = %v; want FAILED_PRECONDITION, already_acked", r)
		}
		// second is leased, under another token: a lost lease, not acked work.
		if r := many.GetResults()[1]; r.GetCode() != int32(codes.FailedPrecondition) || r.GetAlreadyAcked() {
			t.Errorf("AckMany result of a delivery leased under another token = %v; want FAILED_PRECONDITION, not already_acked", r)
		}
		err = ack(second, "lease_not_this_one")
		wantCode(t, err, codes.FailedPrecondition)
		if server.AlreadyAcked(err) {
			t.Errorf("Ack with another token of a leased delivery carries ALREADY_ACKED")
		}
	})
}
