package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hookverify/hookverify/server"
)

// TestInboxLimitAppliesUntilTheSnapshotsBoundInclusive: the inbox limits are checked against
// the last inbox statistics read for StaleInboxSnapshotRefreshes refresh periods after the read,
// up to and including the last instant of that bound: a delivery arriving exactly then, with
// the inbox at its limit, is refused RESOURCE_EXHAUSTED, not stored past the limit.
func TestInboxLimitAppliesUntilTheSnapshotsBoundInclusive(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxPendingTotal = 2 })
		secret, _ := e.setup(t, githubProvider, "full")
		e.accept(t, e.deliver(t, githubProvider, "full", "evt-a", secret))
		e.accept(t, e.deliver(t, githubProvider, "full", "evt-b", secret))
		e.srv.RefreshInboxDepth(t.Context()) // read at the monitor's default interval, 1s
		// A quick read makes the refresh period the interval, so the bound is 5 periods later
		// (a slow read only moves the bound further).
		e.clock.Advance(server.StaleInboxSnapshotRefreshes * time.Second)
		_, err := e.call(t, e.deliver(t, githubProvider, "full", "evt-c", secret))
		wantCode(t, err, codes.ResourceExhausted)
		if n := e.count(t); n != 2 {
			t.Fatalf("%d deliveries stored, want 2", n)
		}
	})
}
