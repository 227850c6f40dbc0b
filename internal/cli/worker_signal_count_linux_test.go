//go:build linux

package cli

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalCountsAFirstThatCameBeforeTheWatch: secondSignal looks at its context first,
// so that a first signal that came before the watch began counts once: the next signal is the
// second, and cuts. TestWorkerSecondSignal* start the watch before any signal and see only
// the other case. Not parallel: it signals its own process (no other test runs meanwhile).
func TestSecondSignalCountsAFirstThatCameBeforeTheWatch(t *testing.T) {
	signalSelf := func() {
		t.Helper()
		if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
	}
	cutWithin := func(hard context.Context, d time.Duration) bool {
		select {
		case <-hard.Done():
			return true
		case <-time.After(d):
			return false
		}
	}

	// The first signal before the watch (ctx already ended): one more cuts.
	first, cancel := context.WithCancel(context.Background())
	cancel()
	hard, stop := secondSignal(first)
	signalSelf()
	if !cutWithin(hard, 5*time.Second) {
		t.Error("a first signal before the watch, then one more: not cut (the first was not counted)")
	}
	stop()

	// No signal before the watch: the first does not cut, the second does.
	hard, stop = secondSignal(context.Background())
	defer stop()
	signalSelf()
	if cutWithin(hard, 300*time.Millisecond) {
		t.Fatal("cut at the first signal")
	}
	signalSelf()
	if !cutWithin(hard, 5*time.Second) {
		t.Error("not cut at the second signal")
	}
}
