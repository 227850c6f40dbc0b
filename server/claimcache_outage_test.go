package server_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// TestRedeliveriesUnderBackpressureRememberedToo: while an inbox limit is reached, an instance
// that never saw a claim reads it from the store once and then remembers it, like any other
// claim; and a new event refused RESOURCE_EXHAUSTED (the store answered: no such claim) is no
// store failure, so the cache keeps answering redeliveries without asking the store.
func TestRedeliveriesUnderBackpressureRememberedToo(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e, st := newEnvOver(t, b, newClaimCountingStore)
		e.options = func(o *server.Options) { o.MaxPendingPerEndpoint = 2 }
		a := e.start(t, st)
		other := e.start(t, st)
		e.options = nil
		p := githubProvider
		secret, _ := a.setup(t, p, "busy")
		reqA := e.deliver(t, p, "busy", "evt-a", secret)
		first := a.accept(t, reqA)
		a.accept(t, e.deliver(t, p, "busy", "evt-b", secret))
		other.srv.RefreshInboxDepth(t.Context())

		claimsDuring := func(fn func()) int64 {
			before := st.claims.Load()
			fn()
			return st.claims.Load() - before
		}
		if n := claimsDuring(func() { other.duplicate(t, reqA, first) }); n != 1 {
			t.Fatalf("the first redelivery to an instance that never saw the claim asked the store %d times, want once", n)
		}
		if n := claimsDuring(func() { other.duplicate(t, reqA, first) }); n != 0 {
			t.Errorf("a redelivery of a claim read back under backpressure asked the store %d times, want 0 (remembered)", n)
		}
		if _, err := other.call(t, e.deliver(t, p, "busy", "evt-c", secret)); status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("a new event at the limit: %v, want RESOURCE_EXHAUSTED", err)
		}
		if n := claimsDuring(func() { other.duplicate(t, reqA, first) }); n != 0 {
			t.Errorf("after a new event was refused, a redelivery asked the store %d times, want 0: the refusal is no store failure", n)
		}
	})
}

// outageStore is a real store whose endpoint reads, claims, token lookups and delivery
// endpoint reads fail while down is set.
type outageStore struct {
	storage.Store
	down atomic.Bool
}

func newOutageStore(st storage.Store) *outageStore { return &outageStore{Store: st} }

func (o *outageStore) failing() error {
	if o.down.Load() {
		return fmt.Errorf("connection refused: %w", storage.ErrUnavailable)
	}
	return nil
}

func (o *outageStore) GetEndpoint(ctx context.Context, id string) (storage.Endpoint, error) {
	if err := o.failing(); err != nil {
		return storage.Endpoint{}, err
	}
	return o.Store.GetEndpoint(ctx, id)
}

func (o *outageStore) ListSecrets(ctx context.Context, endpointID string) ([]storage.Secret, error) {
	if err := o.failing(); err != nil {
		return nil, err
	}
	return o.Store.ListSecrets(ctx, endpointID)
}

func (o *outageStore) Claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	if err := o.failing(); err != nil {
		return storage.ClaimResult{}, err
	}
	return o.Store.Claim(ctx, d)
}

func (o *outageStore) LookupClaim(ctx context.Context, scope, eventID string) (storage.ClaimResult, error) {
	if err := o.failing(); err != nil {
		return storage.ClaimResult{}, err
	}
	return o.Store.LookupClaim(ctx, scope, eventID)
}

func (o *outageStore) TokenByHash(ctx context.Context, hash []byte) (storage.Token, error) {
	if err := o.failing(); err != nil {
		return storage.Token{}, err
	}
	return o.Store.TokenByHash(ctx, hash)
}

func (o *outageStore) DeliveryEndpoints(ctx context.Context, inboxIDs []string) (map[string]string, error) {
	if err := o.failing(); err != nil {
		return nil, err
	}
	return o.Store.DeliveryEndpoints(ctx, inboxIDs)
}

// TestEndpointReadFailureSilencesRememberedClaims: a store failure met while loading an
// endpoint stops the claim cache from answering, as a failed claim does: during the outage a
// redelivery of a remembered claim to an endpoint still cached is UNAVAILABLE like everything
// else, not DUPLICATE from memory.
func TestEndpointReadFailureSilencesRememberedClaims(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e, st := newEnvOver(t, b, newOutageStore)
		a := e.start(t, st)
		p := githubProvider
		secretX, _ := a.setup(t, p, "x")
		secretY, _ := a.setup(t, p, "y")
		reqX := e.deliver(t, p, "x", eventID(p), secretX)
		a.accept(t, reqX) // endpoint x cached, its claim remembered

		st.down.Store(true)
		_, err := a.call(t, e.deliver(t, p, "y", eventID(p), secretY)) // y is read from the store
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("a delivery to an endpoint not cached during the outage: %v, want UNAVAILABLE", err)
		}
		resp, err := a.call(t, reqX)
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("a redelivery of a remembered claim after the endpoint read failed = %v, %v; want UNAVAILABLE", resp.GetVerdict(), err)
		}
	})
}
