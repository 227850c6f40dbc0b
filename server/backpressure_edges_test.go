package server_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hookverify/hookverify/server"
)

// TestBackpressureCountsLeasedDeliveries: the inbox limits count unfinished deliveries, leased
// ones included, not only those waiting for a worker: a fleet of workers that leased
// everything and is stuck (a downstream outage) must not let the inbox grow past the limit.
func TestBackpressureCountsLeasedDeliveries(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(*server.Options)
	}{
		{"per endpoint", func(o *server.Options) { o.MaxPendingPerEndpoint = 2 }},
		{"total", func(o *server.Options) { o.MaxPendingTotal = 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, b backend) {
				e := newEnvWith(t, b, c.set)
				secret, _ := e.setup(t, githubProvider, "stuck")
				e.accept(t, e.deliver(t, githubProvider, "stuck", "evt-a", secret))
				e.accept(t, e.deliver(t, githubProvider, "stuck", "evt-b", secret))
				if got := lease(t, e, 10, time.Hour); len(got) != 2 {
					t.Fatalf("leased %d, want 2", len(got))
				}
				e.srv.RefreshInboxDepth(t.Context())

				_, err := e.call(t, e.deliver(t, githubProvider, "stuck", "evt-c", secret))
				wantCode(t, err, codes.ResourceExhausted)
				if n := e.count(t); n != 2 {
					t.Fatalf("%d deliveries stored, want 2: a refused one must not be stored", n)
				}
			})
		})
	}
}

// TestVerifyBytesAreGivenBackWhenAnswered: the bound on Verify bytes held at once counts
// requests only until they are answered: one after another, far more than the bound in all
// pass, none refused RESOURCE_EXHAUSTED as if every earlier request were still held.
func TestVerifyBytesAreGivenBackWhenAnswered(t *testing.T) {
	b := backends[0] // sqlite: the bound is the server's, not the store's
	e := newEnvWith(t, b, func(o *server.Options) { o.MaxVerifyBytesInFlight = 8 << 10 })
	secret, _ := e.setup(t, githubProvider, "steady")
	for i := range 64 { // each request is some hundreds of bytes: tens of KiB in all
		e.accept(t, e.deliver(t, githubProvider, "steady", fmt.Sprintf("evt-%d", i), secret))
	}
}
