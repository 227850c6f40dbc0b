package server_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// claimCountingStore is a real store that counts the calls that answer a claim from the
// database: Claim and LookupClaim.
type claimCountingStore struct {
	storage.Store
	claims atomic.Int64
}

func newClaimCountingStore(st storage.Store) *claimCountingStore {
	return &claimCountingStore{Store: st}
}

func (c *claimCountingStore) Claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	c.claims.Add(1)
	return c.Store.Claim(ctx, d)
}

func (c *claimCountingStore) LookupClaim(ctx context.Context, scope, eventID string) (storage.ClaimResult, error) {
	c.claims.Add(1)
	return c.Store.LookupClaim(ctx, scope, eventID)
}

// TestRedeliveriesAnsweredFromRememberedClaims proves that an instance answers an
// authenticated redelivery of a claim it committed or read without asking the store, with the
// same claim the store would give; that a forgery is still rejected first; that an instance
// which never saw the claim reads it once; that the cache can be turned off, is bounded, and
// stops trusting a claim once it is half the dedupe window old, before the sweep may delete it.
func TestRedeliveriesAnsweredFromRememberedClaims(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e, st := newEnvOver(t, b, newClaimCountingStore)
		metrics := server.NewMetrics()
		e.options = func(o *server.Options) { o.Metrics = metrics; o.DedupeWindow = 2 * time.Hour }
		a := e.start(t, st)
		e.options = nil
		other := e.start(t, st)
		e.options = func(o *server.Options) { o.ClaimCacheSize = -1 }
		uncached := e.start(t, st)
		e.options = func(o *server.Options) { o.ClaimCacheSize = 2 }
		small := e.start(t, st)

		p := githubProvider
		secret, _ := a.setup(t, p, "gh")
		// claimsDuring runs fn and returns how many claims it asked the store for.
		claimsDuring := func(fn func()) int64 {
			before := st.claims.Load()
			fn()
			return st.claims.Load() - before
		}

		req := e.deliver(t, p, "gh", eventID(p), secret)
		var first *hookverifyv1.VerifyResponse
		if n := claimsDuring(func() { first = a.accept(t, req) }); n != 1 {
			t.Fatalf("a new event asked the store %d times, want once", n)
		}
		if n := claimsDuring(func() {
			for range 5 {
				a.duplicate(t, req, first)
			}
		}); n != 0 {
			t.Errorf("5 redeliveries to the instance that accepted the event asked the store %d times, want 0", n)
		}
		wantMetrics(t, a.srv, "hookverify_claim_cache_hits_total 5")
		// Authentication still comes first: a forged copy of a remembered event is rejected.
		a.reject(t, sign(t, p, "gh", header(req, "X-GitHub-Delivery"), req.GetBody(), e.clock.Now(), p.newSecret()),
			hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)

		// Another instance reads the claim once, then remembers it too.
		if n := claimsDuring(func() { other.duplicate(t, req, first) }); n != 1 {
			t.Errorf("the first redelivery to another instance asked the store %d times, want once", n)
		}
		if n := claimsDuring(func() { other.duplicate(t, req, first) }); n != 0 {
			t.Errorf("the second redelivery to another instance asked the store %d times, want 0", n)
		}
		// With the cache off every redelivery asks the store.
		if n := claimsDuring(func() {
			for range 3 {
				uncached.duplicate(t, req, first)
			}
		}); n != 3 {
			t.Errorf("3 redeliveries with the cache off asked the store %d times, want 3", n)
		}

		// Bounded: of three events accepted, a cache of two forgets the first. (Newest first:
		// reading the first back would make the second make way.)
		var reqs []*hookverifyv1.VerifyRequest
		var firsts []*hookverifyv1.VerifyResponse
		for range 3 {
			r := e.deliver(t, p, "gh", eventID(p), secret)
			reqs, firsts = append(reqs, r), append(firsts, small.accept(t, r))
		}
		for _, c := range []struct{ i, want int64 }{{2, 0}, {1, 0}, {0, 1}} {
			i, want := c.i, c.want
			if n := claimsDuring(func() { small.duplicate(t, reqs[i], firsts[i]) }); n != want {
				t.Errorf("redelivery of event %d of 3 to a cache of 2 asked the store %d times, want %d", i, n, want)
			}
		}

		// Half the dedupe window (2 h) after the claim, the cache no longer vouches for it: the
		// store is asked, and still says DUPLICATE (the claim is not swept before 2 h).
		e.clock.Advance(time.Hour - time.Second)
		if n := claimsDuring(func() { a.duplicate(t, req, first) }); n != 0 {
			t.Errorf("redelivery %v after the claim asked the store %d times, want 0", time.Hour-time.Second, n)
		}
		e.clock.Advance(time.Second)
		if n := claimsDuring(func() { a.duplicate(t, req, first) }); n != 1 {
			t.Errorf("redelivery half the dedupe window after the claim asked the store %d times, want once", n)
		}
		t.Logf("%d claims asked of the store in all", st.claims.Load())
	})
}
