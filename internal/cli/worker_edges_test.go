package cli

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// pendingLease is a fakeInbox whose Lease waits for its caller to give up, and says when the
// first one began.
type pendingLease struct {
	*fakeInbox
	once    *sync.Once
	entered chan struct{}
}

func (p pendingLease) Lease(ctx context.Context, _ *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	p.once.Do(func() { close(p.entered) })
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestWorkerStopsCleanlyWhileALeaseIsPending: SIGTERM while a Lease call waits on a server
// that does not answer ends the worker without an error once --grace has passed: a stop asked
// for is not a failure of the server (exit 1 would have the supervisor report a crash).
func TestWorkerStopsCleanlyWhileALeaseIsPending(t *testing.T) {
	f := pendingLease{&fakeInbox{}, &sync.Once{}, make(chan struct{})}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--grace", "100ms", "--timeout", "30s"}, remote...),
		"--", "sh", "-c", "exit 0"))
	select {
	case <-f.entered: // the Lease call is under way
	case <-time.After(10 * time.Second):
		t.Fatalf("no Lease call was made (output %q)", out.String())
	}
	cancel()
	err, finished := wait(10 * time.Second)
	if !finished {
		t.Fatal("worker did not stop after SIGTERM")
	}
	if err != nil {
		t.Errorf("worker stopped by SIGTERM during a Lease call: %v, want nil (output %q)", err, out.String())
	}
}

// TestWorkerGivesUpALeaseCallAtTheVisibilityTimeout: a Lease call gets no longer than
// --visibility, even under a longer --timeout: an answer after that grants a lease already
// ended, and the worker ran the command of a delivery perhaps another worker's by then.
func TestWorkerGivesUpALeaseCallAtTheVisibilityTimeout(t *testing.T) {
	f := slowLease{&fakeInbox{}, 20 * time.Second}
	remote := startFakeInbox(t, f)
	start := time.Now()
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "1s", "--timeout", "30s"},
		remote...), "--", "true"))
	// 10 s: time to spare on a busy machine, and still half the answer's delay.
	if _, finished := wait(10 * time.Second); !finished {
		t.Fatalf("the worker still waits on a Lease %v after it began, with --visibility 1s (output %q)", time.Since(start), out.String())
	}
}

// TestWorkerSpacesOutRetriesOfAFailingExtension: an extension that fails transiently is tried
// again a third of the visibility timeout later, not at once in a loop that floods a server
// already down.
func TestWorkerSpacesOutRetriesOfAFailingExtension(t *testing.T) {
	f := &fakeInbox{extendErr: func(int) error { return status.Error(codes.Unavailable, "down") }}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "3s"}, remote...),
		"--", "sh", "-c", "sleep 2.5; exit 0"))
	if _, finished := wait(15 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	if _, _, extends := f.snapshot(); len(extends) > 3 {
		t.Errorf("%d ExtendLease calls in 2.5 s on a 3 s lease while the server was down; want at most 3 (output %q)", len(extends), out.String())
	}
}

// TestWorkerStopsRetryingAnAckWhenTheLeaseEnds: an ack failing transiently is retried only while
// the lease lasts; past its end the delivery is another worker's to settle, and --once, whose
// run did not settle it, exits with an error instead of retrying for ever.
func TestWorkerStopsRetryingAnAckWhenTheLeaseEnds(t *testing.T) {
	f := &fakeInbox{ackErr: func(int) error { return status.Error(codes.Unavailable, "down") }}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "2s"}, remote...), "--", "true"))
	err, finished := wait(15 * time.Second)
	if !finished {
		t.Fatalf("the worker still retries its ack 15 s into a 2 s lease (output %q)", out.String())
	}
	if err == nil {
		t.Errorf("--once with an ack never answered: nil, want an error (output %q)", out.String())
	}
}

// hangingAck is a fakeInbox whose Ack waits for its caller to give up, and says when it began.
type hangingAck struct {
	*fakeInbox
	once    *sync.Once
	entered chan struct{}
}

func (h hangingAck) Ack(ctx context.Context, _ *hookverifyv1.AckRequest) (*hookverifyv1.AckResponse, error) {
	h.once.Do(func() { close(h.entered) })
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestWorkerSecondSignalBoundsTheLastSettleCall: after the second signal the delivery gets one
// last call of at most a second, not a whole --timeout: the operator asked the worker to stop
// waiting for the server.
func TestWorkerSecondSignalBoundsTheLastSettleCall(t *testing.T) {
	f := hangingAck{&fakeInbox{}, &sync.Once{}, make(chan struct{})}
	remote := startFakeInbox(t, f)
	second, secondSignal := context.WithCancel(context.Background())
	defer secondSignal()
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), secondSignalKey{}, second))
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--timeout", "30s"}, remote...), "--", "true"))
	select {
	case <-f.entered:
	case <-time.After(10 * time.Second):
		t.Fatalf("no ack was sent (output %q)", out.String())
	}
	cancel()
	secondSignal()
	if _, finished := wait(6 * time.Second); !finished {
		t.Fatalf("the worker still waits on its ack 6 s after the second signal (output %q)", out.String())
	}
}

// TestWorkerTakesADoubledDashDashBeforeItsCommand: "--" ends the flags, and one more "--" before
// the command is not taken for the command's name.
func TestWorkerTakesADoubledDashDashBeforeItsCommand(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "--", "true"))
	err, finished := wait(15 * time.Second)
	if !finished {
		t.Fatal("worker did not finish")
	}
	if acks, _, _ := f.snapshot(); err != nil || len(acks) != 1 {
		t.Errorf("worker --once -- -- true: %v, acks %v; want the delivery acked (output %q)", err, acks, out.String())
	}
}
