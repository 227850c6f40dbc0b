package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// largeBodyInbox is a fakeInbox whose one delivery has a body larger than a pipe's buffer.
type largeBodyInbox struct{ *fakeInbox }

func (l largeBodyInbox) Lease(ctx context.Context, req *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	resp, err := l.fakeInbox.Lease(ctx, req)
	for _, d := range resp.GetDeliveries() {
		d.Body = bytes.Repeat([]byte("x"), 1<<20)
	}
	return resp, err
}

// TestWorkerAcksACommandThatExitedZeroLeavingAChildOnItsStdin: a command that exits 0 has
// done its work, whatever it left running. One that did not read all of a large body and
// started a background process holding its standard input (a daemon it launched, say) made
// the worker's copy of the body wait, and after cmd.WaitDelay exec reported ErrWaitDelay
// instead of success: the delivery was nacked and its work done again at the next attempt.
// Standard output and error are files here, as they are for `hookverify worker` run from a
// shell, so that only the body's pipe is involved.
func TestWorkerAcksACommandThatExitedZeroLeavingAChildOnItsStdin(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, largeBodyInbox{f})
	outFile, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	args := append(append([]string{"--once"}, remote...), "--", "sh", "-c", "exec 3<&0; sleep 3 <&3 & exit 0")
	done := make(chan error, 1)
	go func() {
		done <- runWorker(context.Background(), env{stdin: strings.NewReader(""), stdout: outFile, stderr: outFile}, args)
	}()
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("worker did not finish")
	}
	out, _ := os.ReadFile(outFile.Name())
	if acks, nacks, _ := f.snapshot(); len(acks) != 1 || acks[0] != "ok" || len(nacks) != 0 || err != nil {
		t.Errorf("a command that exited 0 was not acked: acks %v, nacks %q, worker returned %v; output %q", acks, nacks, err, out)
	}
}

// TestWorkerWithACommandThatCannotRunLeasesNothing: a command that cannot be started (a typo,
// a missing interpreter) fails for every delivery alike. The worker leased delivery after
// delivery and nacked each for a later retry, spending an attempt of every one of them, until
// they all sat among the dead letters, never run. It must refuse to start instead.
func TestWorkerWithACommandThatCannotRunLeasesNothing(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...),
		"--", filepath.Join(t.TempDir(), "no-such-command")))
	err, finished := wait(15 * time.Second)
	if !finished {
		t.Fatal("worker did not finish")
	}
	f.mu.Lock()
	leases := f.leases
	f.mu.Unlock()
	if _, nacks, _ := f.snapshot(); leases != 0 || len(nacks) != 0 || err == nil {
		t.Errorf("worker with a missing command: %d leases, nacks %q, returned %v; want nothing leased and an error (output %q)", leases, nacks, err, out.String())
	}
}
