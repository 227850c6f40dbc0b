package server_test

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/server"
)

// TestBackpressureReadFailureIsUnavailable: at an inbox limit a new event's claim is read
// first; when that read fails (the store down), the answer is UNAVAILABLE, as for any store
// failure, not RESOURCE_EXHAUSTED: the inbox's fullness is not what stopped the event.
func TestBackpressureReadFailureIsUnavailable(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e, st := newEnvOver(t, b, newOutageStore)
		e.options = func(o *server.Options) { o.MaxPendingPerEndpoint = 1 }
		a := e.start(t, st)
		e.options = nil
		p := githubProvider
		secret, _ := a.setup(t, p, "busy")
		a.accept(t, e.deliver(t, p, "busy", "evt-a", secret)) // endpoint cached
		a.srv.RefreshInboxDepth(t.Context())
		_, err := a.call(t, e.deliver(t, p, "busy", "evt-b", secret))
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a new event at the limit: %v, want RESOURCE_EXHAUSTED", err)
		}
		st.down.Store(true)
		_, err = a.call(t, e.deliver(t, p, "busy", "evt-c", secret))
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("a new event at the limit whose claim read failed: %v, want UNAVAILABLE", err)
		}
	})
}
