package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestWorkerStopsCleanlyWhileALeaseIsPending: SIGTERM while a Lease call waits on a server
// that does not answer ends the worker without an error once --grace has passed: a stop asked
// for is not a failure of the server (exit 1 would have the supervisor report a crash).
func TestWorkerStopsCleanlyWhileALeaseIsPending(t *testing.T) {
	f := &fakeInbox{leaseBlock: true}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--grace", "100ms", "--timeout", "30s"}, remote...),
		"--", "sh", "-c", "exit 0"))
	time.Sleep(300 * time.Millisecond) // the Lease call is under way
	cancel()
	err, finished := wait(10 * time.Second)
	if !finished {
		t.Fatal("worker did not stop after SIGTERM")
	}
	if err != nil {
		t.Errorf("worker stopped by SIGTERM during a Lease call: %v, want nil (output %q)", err, out.String())
	}
}

// TestWorkerRetriesAnAckAbortedByTheServer: ABORTED (a transaction the database gave up on,
// a serialization conflict) is transient like UNAVAILABLE: the ack is tried again, rather than
// the delivery left unsettled to run again once its lease ends.
func TestWorkerRetriesAnAckAbortedByTheServer(t *testing.T) {
	f := &fakeInbox{ackErr: func(n int) error {
		if n == 1 {
			return status.Error(codes.Aborted, "transaction aborted, retry")
		}
		return nil
	}}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "true"))
	err, finished := wait(15 * time.Second)
	if !finished {
		t.Fatal("worker did not finish")
	}
	acks, _, _ := f.snapshot()
	if len(acks) != 2 || acks[1] != "ok" || err != nil {
		t.Errorf("ack answered ABORTED, then: acks %v, worker returned %v, output %q; want it acked on the second try", acks, err, out.String())
	}
}

// nackDelays is a fakeInbox that records the retry_after of each nack.
type nackDelays struct {
	*fakeInbox
	mu     sync.Mutex
	delays []time.Duration
}

func (n *nackDelays) Nack(ctx context.Context, req *hookverifyv1.NackRequest) (*hookverifyv1.NackResponse, error) {
	n.mu.Lock()
	n.delays = append(n.delays, req.GetRetryAfter().AsDuration())
	n.mu.Unlock()
	return n.fakeInbox.Nack(ctx, req)
}

// TestWorkerNacksADeliveryStoppedByShutdownForAnImmediateRetry: a delivery whose command the
// worker's SIGTERM stopped did not fail; it is nacked with no delay, so that the next worker
// runs it at once, not after --retry-after.
func TestWorkerNacksADeliveryStoppedByShutdownForAnImmediateRetry(t *testing.T) {
	f := &nackDelays{fakeInbox: &fakeInbox{}}
	remote := startFakeInbox(t, f)
	started := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "30s", "--retry-after", "5m"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("touch %s; sleep 5", started)))
	if !waitForFile(t, started, 10*time.Second) {
		t.Fatalf("the command never started; output %q", out.String())
	}
	cancel() // SIGTERM to the worker
	if _, finished := wait(10 * time.Second); !finished {
		t.Fatal("worker did not stop after SIGTERM")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.delays) != 1 || f.delays[0] != 0 {
		t.Errorf("nacks at shutdown with --retry-after 5m: retry_after %v, want one of 0 (output %q)", f.delays, out.String())
	}
}

// TestWorkerGivesUpALeaseCallAtTheVisibilityTimeout: a Lease call gets no longer than
// --visibility, even under a longer --timeout: an answer after that grants a lease already
// ended, and the worker ran the command of a delivery perhaps another worker's by then.
func TestWorkerGivesUpALeaseCallAtTheVisibilityTimeout(t *testing.T) {
	f := slowLease{&fakeInbox{}, 6 * time.Second}
	remote := startFakeInbox(t, f)
	start := time.Now()
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "1s", "--timeout", "30s"},
		remote...), "--", "true"))
	if _, finished := wait(4 * time.Second); !finished {
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
