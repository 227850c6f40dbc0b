package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// hangingBenchServer accepts the 64 primed events and then answers no Verify at all.
type hangingBenchServer struct{ fakeBenchServer }

func (h *hangingBenchServer) Verify(ctx context.Context, req *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
	if h.verifies.Add(1) <= 64 {
		return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED}, nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestBenchTimeoutBoundsEachCall: bench takes --timeout ("deadline for the call") as every
// client command does, but its measured calls ignored it: a call the server never answered
// held its worker silently to the phase's end and 10 s beyond, and was then cut, its time in
// no figure. Each measured call now has that deadline (as a provider gives up on a delivery,
// GitHub after 10 s): one not answered within it is an error:DeadlineExceeded row, at its
// latency, and the worker calls again.
func TestBenchTimeoutBoundsEachCall(t *testing.T) {
	h := &hangingBenchServer{}
	remote := serveFakeBench(t, &h.fakeBenchServer, h)
	start := time.Now()
	code, out, errOut := run(t, "", append([]string{"bench", "--duration", "500ms", "--workers", "2", "--mix", "dup=100", "--timeout", "100ms"}, remote...)...)
	took := time.Since(start)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errOut)
	}
	if !hasRow(out, "error:DeadlineExceeded") || strings.Contains(out, "cut before they were answered") {
		t.Errorf("calls hung past --timeout 100ms: want error:DeadlineExceeded rows, none cut:\n%s", out)
	}
	if took > 5*time.Second {
		t.Errorf("bench of 500 ms with --timeout 100ms took %v", took)
	}
}
