//go:build linux

package cli

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// fdStarvedInbox is a fakeInbox that, as it hands out its delivery, leaves the process no
// file descriptor to open (RLIMIT_NOFILE lowered to the lowest free one), and gives them back
// at the first nack: the worker's cmd.Start then fails for want of a pipe (EMFILE), as it does
// when the worker's own descriptors run out, or its fork when the container's pids do (EAGAIN).
type fdStarvedInbox struct {
	*fakeInbox
	restore func()
}

func (f fdStarvedInbox) Nack(ctx context.Context, req *hookverifyv1.NackRequest) (*hookverifyv1.NackResponse, error) {
	f.restore()
	return f.fakeInbox.Nack(ctx, req)
}

// TestWorkerGivesBackADeliveryItCannotForkFor: cmd.Start failing for want of the worker's own
// resources (no file descriptor left, EMFILE/ENFILE; no process left, EAGAIN; no memory,
// ENOMEM) is no more the delivery's failure than a command gone since start is, and it fails
// every delivery alike: each was nacked as failed, its attempt spent, the worker leasing the
// next at once, so the inbox drained into nacks in a moment and, on last attempts, into the
// dead letters unrun. The delivery is given back unrun (not_attempted) and the worker stops,
// as for a command it cannot start.
func TestWorkerGivesBackADeliveryItCannotForkFor(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	restore := func() {
		once.Do(func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Errorf("restore RLIMIT_NOFILE: %v", err)
			}
		})
	}
	t.Cleanup(restore)
	f := &fakeInbox{leaseErr: func(n int) error {
		if n != 1 {
			return nil
		}
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return nil // the limit stays: the test then fails on the nack counted
		}
		open := map[uint64]bool{}
		for _, e := range entries {
			if fd, err := strconv.ParseUint(e.Name(), 10, 64); err == nil {
				open[fd] = true
			}
		}
		free := uint64(0)
		for open[free] {
			free++
		}
		// ReadDir's own descriptor is closed again: it is free or above.
		lim := syscall.Rlimit{Cur: free, Max: old.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Errorf("lower RLIMIT_NOFILE: %v", err)
		}
		return nil
	}}
	remote := startFakeInbox(t, fdStarvedInbox{f, restore})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--idle", "10ms"}, remote...), "--", "true"))
	err, finished := wait(10 * time.Second)
	restore()
	if !finished {
		cancel()
		wait(10 * time.Second)
	}
	_, nacks, _ := f.snapshot()
	if len(nacks) == 0 {
		t.Skipf("cmd.Start did not fail (output %q)", out.String())
	}
	if !strings.Contains(nacks[0], "too many open files") {
		t.Skipf("cmd.Start failed otherwise: %q", nacks[0])
	}
	if f.givenBackCount() != 1 || len(nacks) != 1 {
		t.Errorf("nacks %q (%d given back); want one nack giving the attempt back (output %q)", nacks, f.givenBackCount(), out.String())
	}
	if !finished || err == nil || !strings.Contains(err.Error(), "command:") {
		t.Errorf("worker returned %v (finished %v), want it stopped on the start failure", err, finished)
	}
}
