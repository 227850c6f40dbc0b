package client

import (
	"testing"
	"time"
)

// TestBackoffIsFullJitterBelowTheExponentialCeiling: the sleep before retry n is drawn from
// [0, min(MaxBackoff, InitialBackoff·2^(n-1))), as RetryPolicy documents: never the ceiling
// itself (edges retrying together would retry in step), never past it (a first retry that
// waited up to twice InitialBackoff spent the edge's budget), and not always the same. Ceilings
// of a few nanoseconds make a draw of the ceiling itself likely, were it allowed.
func TestBackoffIsFullJitterBelowTheExponentialCeiling(t *testing.T) {
	t.Parallel()
	for _, initial := range []time.Duration{time.Second, 2 * time.Nanosecond} {
		p := RetryPolicy{MaxAttempts: 10, InitialBackoff: initial, MaxBackoff: time.Hour, MaxElapsed: time.Hour}
		for n, ceiling := range map[int]time.Duration{1: initial, 2: 2 * initial, 3: 4 * initial} {
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
}
