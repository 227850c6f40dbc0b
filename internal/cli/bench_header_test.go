package cli

import (
	"context"
	mrand "math/rand/v2"
	"strings"
	"testing"
	"time"
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

// TestBenchOpenLoopStoppedEarlyCountsOnlyTheCallsDueUntilThen: an open loop stopped before its
// end (Ctrl-C) counted every call of the whole phase as due, and so reported the rest of the
// phase as calls the server never answered.
func TestBenchOpenLoopStoppedEarlyCountsOnlyTheCallsDueUntilThen(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(200*time.Millisecond, cancel)
	res := drive(ctx, loadShape{workers: 4, duration: time.Minute, rate: 100}, func(context.Context, int, *mrand.Rand) (string, int, error) {
		return "ok", 0, nil
	})
	// The whole minute would be 6,000; the bound leaves room for a machine stalled for seconds.
	if res.due < 1 || res.due > 3000 || res.due > int(res.elapsed/(10*time.Millisecond))+1 {
		t.Errorf("%d calls counted due in an open loop at 100/s stopped after %v", res.due, res.elapsed)
	}
}
