//go:build linux

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestWorkerSecondSignalStopsWaiting: on SIGINT or SIGTERM the worker gives its running command
// SIGTERM and waits --grace for it; an operator pressing Ctrl-C again (or a supervisor
// sending a second SIGTERM) wants it to stop waiting, as serve does. The second signal did
// nothing: a command that ignores SIGTERM held the worker for the whole --grace. It is killed
// at once now, its delivery still given back.
// startWorkerProcess runs hookverify with args (a worker) as a process of its own, whose
// signals are its own, and waits for its command to write its pid to pidFile. It returns the
// worker, a channel its end is sent on, its output, and the command's pid.
func startWorkerProcess(t *testing.T, args []string, pidFile string) (*exec.Cmd, chan error, *syncbuf.Buffer, int) {
	t.Helper()
	worker := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$")
	encoded, _ := json.Marshal(args)
	worker.Env = append(os.Environ(), workerArgsEnv+"="+string(encoded))
	out := &syncbuf.Buffer{}
	worker.Stdout, worker.Stderr = out, out
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- worker.Wait() }()
	t.Cleanup(func() {
		_ = worker.Process.Kill()
		<-exited
	})
	if !waitForFile(t, pidFile, 10*time.Second) {
		t.Fatalf("the command never started; output %q", out.String())
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return worker, exited, out, pid
}

// TestWorkerSecondSignalStopsWaiting: on SIGINT or SIGTERM the worker gives its running command
// SIGTERM and waits --grace for it; an operator pressing Ctrl-C again (or a supervisor
// sending a second SIGTERM) wants it to stop waiting, as serve does. The second signal did
// nothing: a command that ignores SIGTERM held the worker for the whole --grace. It is killed
// at once now, its delivery still given back.
func TestWorkerSecondSignalStopsWaiting(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	pidFile := filepath.Join(t.TempDir(), "pid")
	args := append(append([]string{"worker", "--visibility", "30s", "--grace", "60s"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("trap '' TERM; echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 60", pidFile, pidFile, pidFile))
	worker, exited, out, pid := startWorkerProcess(t, args, pidFile)
	if err := worker.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := worker.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err // for the cleanup's wait
	case <-time.After(5 * time.Second):
		t.Fatalf("the worker still waits for its command 5 s after a second SIGINT (--grace 60s); output %q", out.String())
	}
	if syscall.Kill(pid, 0) == nil {
		t.Errorf("the command (pid %d) still runs after the worker stopped", pid)
	}
	if _, nacks, _ := f.snapshot(); len(nacks) != 1 || f.givenBackCount() != 1 {
		t.Errorf("nacks %q (%d given back) after a second signal; want the delivery given back (output %q)", nacks, f.givenBackCount(), out.String())
	}
}

// nackUnavailable is a fakeInbox whose Nack always answers UNAVAILABLE: a server gone.
type nackUnavailable struct{ *fakeInbox }

func (nackUnavailable) Nack(context.Context, *hookverifyv1.NackRequest) (*hookverifyv1.NackResponse, error) {
	return nil, status.Error(codes.Unavailable, "server gone")
}

// TestWorkerSecondSignalStopsTheRetries: at shutdown with the server gone, the nack of the
// stopped command is tried again while its lease lasts (--visibility, here 60 s); a second
// signal did not stop that wait either.
func TestWorkerSecondSignalStopsTheRetries(t *testing.T) {
	remote := startFakeInbox(t, nackUnavailable{&fakeInbox{}})
	pidFile := filepath.Join(t.TempDir(), "pid")
	args := append(append([]string{"worker", "--visibility", "60s"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 60", pidFile, pidFile, pidFile))
	worker, exited, out, _ := startWorkerProcess(t, args, pidFile)
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "trying again") {
		if time.Now().After(deadline) {
			t.Fatalf("no nack retried after SIGTERM; output %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := worker.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
	case <-time.After(5 * time.Second):
		t.Fatalf("the worker still retries its nack 5 s after a second SIGTERM; output %q", out.String())
	}
}
