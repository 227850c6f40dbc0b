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

// TestBenchBodiesAboveTheDefaultLimit: the bench's endpoint had the default body limit (1 MiB),
// so `--body-bytes` above it ran a whole bench of body_too_large rejections, reported as if
// they were the server's figures. Its endpoint now takes the bodies asked for.
func TestBenchBodiesAboveTheDefaultLimit(t *testing.T) {
	remote, _ := startTestServer(t)
	code, out, errOut := run(t, "", append([]string{"bench", "--duration", "300ms", "--workers", "2", "--mix", "new=100",
		"--body-bytes", "1572864"}, remote...)...)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errOut)
	}
	if !strings.Contains(out, "accepted") || strings.Contains(out, "rejected") {
		t.Errorf("1.5 MiB bodies were not all accepted:\n%s", out)
	}
	code, _, errOut = run(t, "", append([]string{"bench", "--body-bytes", "33554433"}, remote...)...)
	if code != 2 || !strings.Contains(errOut, "--body-bytes") {
		t.Errorf("--body-bytes over the server's ceiling: exit %d, %s; want a usage error", code, errOut)
	}
}
