package server_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestDisableReachesABusyInstanceWithinTTL: an endpoint disabled through one instance is
// refused by another within --cache-ttl, while that other one is under steady load (its entry
// refreshed ahead all the time), and never accepted again after that.
func TestDisableReachesABusyInstanceWithinTTL(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const ttl = 400 * time.Millisecond
		e := newEnvWith(t, b, func(o *server.Options) { o.CacheTTL = ttl })
		other := e.start(t, e.store)
		p := githubProvider
		secret, _ := e.setup(t, p, "busy")
		other.accept(t, e.deliver(t, p, "busy", eventID(p), secret))

		var changedAt atomic.Pointer[time.Time]
		var late atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					req := e.deliver(t, p, "busy", eventID(p), secret)
					began := time.Now()
					resp, err := other.verifier.Verify(t.Context(), req)
					if err != nil {
						if status.Code(err) != codes.Canceled {
							t.Errorf("Verify: %v", err)
						}
						return
					}
					if at := changedAt.Load(); at != nil && resp.GetVerdict() == hookverifyv1.Verdict_VERDICT_ACCEPTED && began.Sub(*at) > ttl {
						late.Add(1)
					}
				}
			})
		}
		time.Sleep(3 * ttl)
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "busy", Disabled: true}}); err != nil {
			t.Fatalf("UpdateEndpoint: %v", err)
		}
		now := time.Now()
		changedAt.Store(&now)
		time.Sleep(4 * ttl)
		close(stop)
		wg.Wait()
		if n := late.Load(); n > 0 {
			t.Errorf("%d deliveries that arrived more than %s after the endpoint was disabled were accepted", n, ttl)
		}
	})
}
