package client

import (
	"testing"
	"time"
)

// TestBackoffIsFullJitterBelowTheExponentialCeiling: the sleep before retry n is drawn from
// [0, min(MaxBackoff, InitialBackoff·2^(n-1))), as RetryPolicy documents: never the ceiling
// itself (edges retrying together would retry in step), never past it (a first retry that
// waited up to twice InitialBackoff spent the edge's budget), and not always the same.
func TestBackoffIsFullJitterBelowTheExponentialCeiling(t *testing.T) {
	p := RetryPolicy{MaxAttempts: 10, InitialBackoff: time.Second, MaxBackoff: time.Hour, MaxElapsed: time.Hour}
	for n, ceiling := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second} {
		seen := map[time.Duration]bool{}
		for range 200 {
			d := p.backoff(n)
			if d < 0 || d >= ceiling {
				t.Fatalf("backoff(%d) = %v, want within [0, %v)", n, d, ceiling)
			}
			seen[d] = true
		}
		if len(seen) < 2 {
			t.Errorf("backoff(%d) drew the same sleep 200 times: no jitter", n)
		}
	}
}
