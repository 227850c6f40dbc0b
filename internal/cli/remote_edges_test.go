package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRemoteCallsEndAtTheirTimeout: --timeout bounds each remote call. A server that takes the
// call and never answers makes the command fail with DeadlineExceeded once the timeout has
// passed, rather than hold the operator's terminal (or a script) for ever.
func TestRemoteCallsEndAtTheirTimeout(t *testing.T) {
	_, addr := startStalledVerifier(t)
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"id":"evt_1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	type result struct {
		code   int
		stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, _, errOut := run(t, "", "verify", "--server", addr, "--timeout", "1s", "--endpoint", "e", "--body", body)
		done <- result{code, errOut}
	}()
	// A minute only stops a hang: the command must end about a second in.
	select {
	case r := <-done:
		if r.code == 0 || !strings.Contains(r.stderr, "DeadlineExceeded") {
			t.Errorf("exit %d, stderr %q; want a failure naming DeadlineExceeded", r.code, r.stderr)
		}
	case <-time.After(time.Minute):
		t.Fatal("verify against a server that never answers did not end at its --timeout of 1s")
	}
}
