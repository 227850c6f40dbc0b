package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// nackAnswers is a fakeInbox whose Nack call number n (1-based) gets answer(n); every call is
// recorded as made, whatever its answer (a nack whose answer was lost went through).
type nackAnswers struct {
	*fakeInbox
	answer func(n int) error
	calls  int
}

func (f *nackAnswers) Nack(ctx context.Context, req *hookverifyv1.NackRequest) (*hookverifyv1.NackResponse, error) {
	resp, _ := f.fakeInbox.Nack(ctx, req)
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if err := f.answer(n); err != nil {
		return nil, err
	}
	return resp, nil
}

// TestWorkerCountsANackRetriedAfterALostAnswerSettled: a nack that went through but whose
// answer was lost (UNAVAILABLE, a timeout) is sent again, and the server, the lease released
// by the first, answers FAILED_PRECONDITION. The worker reported the delivery not settled and
// `--once` exited 1, though the nack had been made (and either way the delivery runs again).
// A nack refused on its first attempt is still a lease lost, and still fails --once.
func TestWorkerCountsANackRetriedAfterALostAnswerSettled(t *testing.T) {
	lost := status.Error(codes.FailedPrecondition, "nack: lease lost (it expired, or a nack or ack under it ended it)")
	for _, tc := range []struct {
		name    string
		first   error
		settled bool
	}{
		{"answer lost (unavailable)", status.Error(codes.Unavailable, "connection reset"), true},
		{"answer lost (timeout)", status.Error(codes.DeadlineExceeded, "deadline exceeded"), true},
		{"lease lost at the first attempt", lost, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &nackAnswers{fakeInbox: &fakeInbox{}, answer: func(n int) error {
				if n == 1 {
					return tc.first
				}
				return lost
			}}
			remote := startFakeInbox(t, f)
			wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "false"))
			err, finished := wait(15 * time.Second)
			if !finished {
				t.Fatal("worker did not finish")
			}
			if settled := err == nil; settled != tc.settled {
				t.Errorf("worker --once returned %v (output %q); want settled %v", err, out.String(), tc.settled)
			}
		})
	}
}

// TestWorkerTermsItsCommandAtOnceWhileAnExtensionHangs: the extension call ran in the loop
// that waits for the command and for the worker's shutdown, so a SIGTERM to the worker while
// an extension hung reached the command only when the call ended: with the lease's end, by
// which time the worker took the lease for lost and killed the command outright, never
// giving it its SIGTERM and --grace.
func TestWorkerTermsItsCommandAtOnceWhileAnExtensionHangs(t *testing.T) {
	f := hangingExtend{&fakeInbox{}}
	remote := startFakeInbox(t, f)
	dir := t.TempDir()
	started, termed := filepath.Join(dir, "started"), filepath.Join(dir, "termed")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Leased for 6 s: the extension at 2 s hangs until the lease's end.
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "6s", "--timeout", "30s", "--grace", "5s"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("trap 'touch %s; exit 0' TERM; touch %s; sleep 20 & wait", termed, started)))
	if !waitForFile(t, started, 10*time.Second) {
		t.Fatalf("the command never started; output %q", out.String())
	}
	time.Sleep(2500 * time.Millisecond) // the extension is under way
	cancel()                            // SIGTERM to the worker
	if !waitForFile(t, termed, 1500*time.Millisecond) {
		t.Errorf("the command got no SIGTERM within 1.5 s of the worker's, an extension hanging (output %q)", out.String())
	}
	if _, finished := wait(15 * time.Second); !finished {
		t.Fatal("worker did not stop")
	}
}
