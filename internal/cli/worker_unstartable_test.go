package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestWorkerGivesBackADeliveryItsCommandCannotRunFor: the command was found at start, and is
// gone when a delivery comes (a deploy replacing it, a volume unmounted). exec fails before
// anything ran, for every delivery alike: each was nacked as failed, its attempt spent, the
// worker going on to the next, so that the inbox drained into the dead letters unrun, on the
// last attempt at once, which the check at start is there to prevent. The delivery is given
// back unrun (not_attempted, for an immediate retry elsewhere) and the worker stops, as it does
// at start when the command cannot run.
func TestWorkerGivesBackADeliveryItsCommandCannotRunFor(t *testing.T) {
	command := filepath.Join(t.TempDir(), "handler")
	if err := os.WriteFile(command, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fakeInbox{leaseErr: func(int) error {
		os.Remove(command) // gone once the worker has started
		return nil
	}}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--idle", "10ms"}, remote...), "--", command))
	err, finished := wait(10 * time.Second)
	if !finished {
		cancel()
		wait(10 * time.Second)
		t.Fatalf("the worker went on leasing with a command it cannot run (output %q)", out.String())
	}
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("worker returned %v, want the command's start failure", err)
	}
	acks, nacks, _ := f.snapshot()
	if len(acks) != 0 || len(nacks) != 1 || f.givenBackCount() != 1 {
		t.Errorf("acks %v, nacks %q (%d given back); want one nack giving the attempt back (output %q)", acks, nacks, f.givenBackCount(), out.String())
	}
}

// nulURLInbox is a fakeInbox whose one delivery's URL holds NUL, which exec refuses in the
// command's environment (HOOKVERIFY_URL).
type nulURLInbox struct{ *fakeInbox }

func (n nulURLInbox) Lease(ctx context.Context, req *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	resp, err := n.fakeInbox.Lease(ctx, req)
	for _, d := range resp.GetDeliveries() {
		d.Url = "https://hooks.example.com/ep?x=\x00"
	}
	return resp, err
}

// TestWorkerFailsADeliveryItsEnvironmentCannotHold: a start failure caused by the delivery
// itself is the delivery's failure, nacked with its attempt counted, and the worker goes on:
// given back, the same delivery would stop every worker that leased it, for ever.
func TestWorkerFailsADeliveryItsEnvironmentCannotHold(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, nulURLInbox{f})
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "true"))
	err, finished := wait(10 * time.Second)
	if !finished {
		t.Fatal("worker did not finish")
	}
	if err != nil && strings.Contains(err.Error(), "command:") {
		t.Errorf("worker stopped for a delivery's own start failure: %v", err)
	}
	if _, nacks, _ := f.snapshot(); len(nacks) != 1 || f.givenBackCount() != 0 {
		t.Errorf("nacks %q (%d given back); want one nack counting the attempt (output %q)", nacks, f.givenBackCount(), out.String())
	}
}
