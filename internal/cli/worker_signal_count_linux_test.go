//go:build linux

package cli

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSignalContextCountsEverySignalOnce: the first SIGINT or SIGTERM ends Main's context, the
// second the context secondSignal gives serve and the worker, and nothing else does. One watch
// counts both: there is no window (a command's own watch starting after it looked at Main's
// context) in which a signal was caught and counted by nobody. Not parallel: it signals its
// own process (no other test runs meanwhile).
func TestSignalContextCountsEverySignalOnce(t *testing.T) {
	ended := func(ctx context.Context, d time.Duration) bool {
		select {
		case <-ctx.Done():
			return true
		case <-time.After(d):
			return false
		}
	}
	signalSelf := func(sig syscall.Signal) {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), sig); err != nil {
			t.Fatal(err)
		}
	}
	ctx, stop := signalContext()
	defer stop()
	second := secondSignal(ctx)
	if ended(ctx, 100*time.Millisecond) || ended(second, 0) {
		t.Fatal("ended before any signal")
	}
	signalSelf(syscall.SIGTERM)
	if !ended(ctx, 5*time.Second) {
		t.Fatal("the first signal did not end Main's context")
	}
	// A watch started now, after the first signal, is the same watch: one more signal cuts.
	if ended(secondSignal(ctx), 300*time.Millisecond) {
		t.Fatal("the first signal ended the second signal's context too")
	}
	signalSelf(syscall.SIGINT)
	if !ended(second, 5*time.Second) {
		t.Fatal("the second signal did not end the second signal's context")
	}
	if got := secondSignalName(second); got != os.Interrupt.String() {
		t.Errorf("second signal named %q, want %q", got, os.Interrupt.String())
	}

	// A context that did not come from Main has no second signal.
	if ended(secondSignal(context.Background()), 0) {
		t.Error("secondSignal of a context without signals has ended")
	}
}
