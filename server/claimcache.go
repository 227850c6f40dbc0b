package server

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookverify/hookverify/storage"
)

const (
	// DefaultClaimCacheSize is how many committed claims an instance remembers, so that an
	// authenticated redelivery of one of them is answered DUPLICATE without a database read.
	// An entry holds the identity, the inbox id, the operation key and a time: about 340 bytes
	// with the map's overhead for a 36-character event id, so the default costs some 16 MiB
	// when full.
	DefaultClaimCacheSize = 50000
	// DefaultClaimCacheTTL is how long an entry is trusted. A claim is only ever removed by the
	// retention sweep, once older than the dedupe window, so a bounded age (see claimCache.get)
	// is all the cache needs to stay exact; the TTL keeps memory for recent redeliveries.
	DefaultClaimCacheTTL = 10 * time.Minute
	// DefaultDedupeWindow is how long claims are kept unless the retention says otherwise.
	DefaultDedupeWindow = 30 * 24 * time.Hour
)

// claimKey is the identity of a claim: its dedupe scope and event id.
type claimKey struct{ scope, eventID string }

type cachedClaim struct {
	claim    storage.ClaimResult
	cachedAt time.Time
}

// claimCache remembers committed claims. Claims are immutable while they exist (inbox id,
// operation key and first receipt never change), and a claim disappears only when the
// retention sweep deletes it after the dedupe window, so a positive answer from the cache is
// the answer the database would give, provided the entry is dropped well before its claim
// can be swept: an entry is trusted for at most the TTL, and never once its claim is older
// than half the dedupe window. Every instance must run with the same dedupe window, which the
// sweep assumes anyway. Only claims the store has returned (committed, or read back) enter
// it; a miss costs what it did without the cache, the claim in the store. It is bounded: when
// full, the oldest insertion makes way (FIFO, kept in a ring of keys).
//
// It is not consulted while the store is failing: from a failed claim until a claim that
// started after that failure succeeds, every redelivery goes to the store, so that during an
// outage callers get UNAVAILABLE for everything, as without the cache, rather than a mix. (A
// remembered claim was committed, so DUPLICATE would be true then too; the rule keeps outages
// simple to reason about and to test.) Nor is it consulted, by Verify, while the inbox
// monitor cannot read the store (health NOT_SERVING for storage, see storageAnswersMonitor):
// an outage met only by redeliveries fails no store call, and a store whose health check fails
// may refuse the DUPLICATE itself (SQLite with its files deleted under it).
type claimCache struct {
	ttl time.Duration
	// base is the monotonic origin of failedAt and okStartedAt (nanoseconds since base, plus
	// one so that zero means never).
	base        time.Time
	failedAt    atomic.Int64 // when the latest store failure was seen
	okStartedAt atomic.Int64 // the latest start of a store call that succeeded

	mu      sync.Mutex
	maxAge  time.Duration // claims older than this are not trusted: half the dedupe window
	entries map[claimKey]cachedClaim
	ring    []claimKey // insertion order; ring[next] is the oldest once the ring is full
	next    int
}

// storageAnswersMonitor reports whether the inbox monitor's latest read of the store answered
// (health SERVING as far as storage goes). While it does not, the claim cache is not
// consulted: a store whose health check fails may refuse the DUPLICATE the cache would give
// (SQLite with its database file deleted: the claim is lost at the restore), and an outage
// met only by redeliveries otherwise fails no Verify call that would silence the cache.
func (s *Server) storageAnswersMonitor() bool { return !s.storageDown.Load() }

// newClaimCache returns a cache of size entries, or nil (no cache) when size or ttl is not
// positive. A nil *claimCache is valid and remembers nothing.
func newClaimCache(size int, ttl, dedupeWindow time.Duration) *claimCache {
	if size <= 0 || ttl <= 0 {
		return nil
	}
	if dedupeWindow <= 0 {
		dedupeWindow = DefaultDedupeWindow
	}
	return &claimCache{ttl: ttl, base: time.Now(), maxAge: dedupeWindow / 2, entries: make(map[claimKey]cachedClaim), ring: make([]claimKey, 0, size)}
}

// storeCallEnded records the outcome of a store call (a claim, a claim lookup, an endpoint
// load) that started at started: a failure stops the cache from answering until a call started
// after it succeeds.
func (c *claimCache) storeCallEnded(started time.Time, err error) {
	if c == nil {
		return
	}
	latest := &c.okStartedAt
	at := int64(started.Sub(c.base)) + 1
	if err != nil {
		latest, at = &c.failedAt, int64(time.Since(c.base))+1
	}
	for {
		old := latest.Load()
		if old >= at || latest.CompareAndSwap(old, at) {
			return
		}
	}
}

// storeHealthy reports whether no store failure has been seen since the start of the latest
// successful store call.
func (c *claimCache) storeHealthy() bool {
	failed := c.failedAt.Load()
	return failed == 0 || c.okStartedAt.Load() > failed
}

// get returns the cached claim of (scope, eventID), if it is there and still to be trusted at
// now (monotonic time for the TTL, the server's clock for the claim's age), and the store is
// not failing.
func (c *claimCache) get(scope, eventID string, now time.Time) (storage.ClaimResult, bool) {
	if c == nil || !c.storeHealthy() {
		return storage.ClaimResult{}, false
	}
	k := claimKey{scope, eventID}
	c.mu.Lock()
	e, ok := c.entries[k]
	maxAge := c.maxAge
	c.mu.Unlock()
	if !ok || time.Since(e.cachedAt) >= c.ttl || now.Sub(e.claim.FirstReceivedAt) >= maxAge {
		return storage.ClaimResult{}, false
	}
	e.claim.Accepted = false // whoever asks now is a redelivery
	return e.claim, true
}

// sweptAfter lowers the age bound to half of a dedupe window the retention sweeps with, if
// that is shorter than the one the cache was made with.
func (c *claimCache) sweptAfter(dedupeWindow time.Duration) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxAge = min(c.maxAge, dedupeWindow/2)
}

// put remembers a claim the store returned.
func (c *claimCache) put(scope, eventID string, claim storage.ClaimResult) {
	if c == nil {
		return
	}
	k := claimKey{scope, eventID}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[k]; ok {
		// Already remembered (and in the ring): refresh it without a second ring slot.
		c.entries[k] = cachedClaim{claim: claim, cachedAt: time.Now()}
		return
	}
	if len(c.ring) < cap(c.ring) {
		c.ring = append(c.ring, k)
	} else {
		delete(c.entries, c.ring[c.next])
		c.ring[c.next] = k
		c.next = (c.next + 1) % len(c.ring)
	}
	c.entries[k] = cachedClaim{claim: claim, cachedAt: time.Now()}
}

// len reports how many claims are remembered (for tests).
func (c *claimCache) len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
