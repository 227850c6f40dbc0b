package cli

import (
	"strings"
	"testing"
)

// TestBenchHeaderSaysTheRate: --rate takes rates from 0.01 calls/s, and the header says the
// rate the run kept; below 0.5 it read "open loop at 0 calls/s", which is no rate at all (and
// 0 is the closed loop's).
func TestBenchHeaderSaysTheRate(t *testing.T) {
	remote, _ := startTestServer(t)
	code, out, errOut := run(t, "", append([]string{"bench", "--duration", "50ms", "--workers", "1", "--mix", "dup=100", "--rate", "0.25"}, remote...)...)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errOut)
	}
	if !strings.Contains(out, "open loop at 0.25 calls/s") {
		t.Errorf("the header does not say the rate 0.25 calls/s:\n%s", out)
	}
}
