//go:build linux

package cli

import (
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
)

// workerArgsEnv, when set in a re-run of this test binary, makes TestWorkerProcess run
// hookverify with these arguments (a JSON array) as the whole process.
const workerArgsEnv = "HOOKVERIFY_TEST_WORKER_ARGS"

// TestWorkerProcess is not a test of its own: it is the worker process of
// TestWorkerKilledOutrightTakesItsCommandWithIt.
func TestWorkerProcess(t *testing.T) {
	raw := os.Getenv(workerArgsEnv)
	if raw == "" {
		t.Skip("only runs as the worker process of another test")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		t.Fatal(err)
	}
	os.Exit(Main(args, strings.NewReader(""), os.Stdout, os.Stderr))
}

// TestWorkerKilledOutrightTakesItsCommandWithIt: a worker killed with SIGKILL (the OOM killer)
// cannot stop its command, whose lease then runs out while it still runs, and another worker
// may then run the same delivery. The kernel kills the command with it.
func TestWorkerKilledOutrightTakesItsCommandWithIt(t *testing.T) {
	remote := startFakeInbox(t, &fakeInbox{})
	pidFile := filepath.Join(t.TempDir(), "pid")
	// exec: the command's own process is the one that waits, as a program run directly is.
	args := append(append([]string{"worker", "--visibility", "30s"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("echo $$ > %s.tmp && mv %s.tmp %s && exec sleep 60", pidFile, pidFile, pidFile))
	worker := exec.Command(os.Args[0], "-test.run=^TestWorkerProcess$")
	encoded, _ := json.Marshal(args)
	worker.Env = append(os.Environ(), workerArgsEnv+"="+string(encoded))
	if err := worker.Start(); err != nil {
		t.Fatal(err)
	}
	defer worker.Process.Kill()
	if !waitForFile(t, pidFile, 10*time.Second) {
		t.Fatal("the command never started")
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)

	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the command (pid %d) still runs 5 s after its worker was killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
