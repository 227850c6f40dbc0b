package server

import (
	"context"
	"sync"
	"time"
)

// refreshCache holds values read from the store (endpoints with their secrets, API tokens) for
// at most ttl after the read began, so that a change made through another instance reaches this
// one within ttl. Changes made through this instance call invalidate and apply at once.
//
// It keeps the callers of one key from reading it together. Without that, every caller that
// found an entry expired read the store itself: at a few thousand calls a second to one endpoint
// that was a burst of reads every ttl, queueing for the store's connections in front of the
// claim batch that all new events wait on, and it set the tail of Verify's latency (BENCHMARKS.md,
// seventh session). So:
//   - one caller loads a missing or expired key; the others that need it wait for that load
//     (unless it began more than ttl before they asked: they then load again after it);
//   - a key still in use is refreshed ahead of its expiry, once three quarters of ttl have
//     passed, by the one caller that notices first, while the others keep the valid entry. A
//     key in steady use is then never missed at all. The bound holds: no entry is used once ttl
//     has passed since its read began.
//
// Expiry uses the monotonic clock, not the server's injected one, so it works the same under a
// test's frozen clock.
type refreshCache[K comparable, V any] struct {
	ttl time.Duration
	// max bounds the entries: absent keys are cached too, so that callers hammering unknown ids
	// cost one read per ttl each; without a bound, callers choosing a new random one per call
	// would grow the cache, and the server's memory, without limit.
	max     int
	mu      sync.Mutex
	entries map[K]*refreshEntry[V]
	loads   map[K]*pendingLoad[V]
	// nextSweep is when a full cache may next be swept of expired entries: at most once per
	// ttl, so that a full cache of live entries does not cost a full scan per miss.
	nextSweep time.Time
	// generation is bumped by every invalidation, so that a load that raced with a change made
	// through this instance is not stored over the newer state.
	generation uint64
}

type refreshEntry[V any] struct {
	value V
	// refreshAt is when the next caller should reload the entry; expires when none may use it.
	refreshAt, expires time.Time
}

// pendingLoad is one load in flight, which other callers of its key wait for.
type pendingLoad[V any] struct {
	done  chan struct{}
	value V
	err   error
	// began is when the load started: its value may be what the store held then.
	began time.Time
	// generation is the cache's when the load was registered: an invalidation since then
	// keeps its value out of the cache.
	generation uint64
	// callerGone is set when the load failed because the context of the caller running it
	// ended: the callers waiting for it then load for themselves rather than take that error.
	callerGone bool
}

func newRefreshCache[K comparable, V any](ttl time.Duration, max int) *refreshCache[K, V] {
	return &refreshCache[K, V]{ttl: ttl, max: max, entries: map[K]*refreshEntry[V]{}, loads: map[K]*pendingLoad[V]{}}
}

// get returns key's value from the cache, or from load, run by one caller for all those who
// need key at the time. With a ttl of zero or less nothing is cached and every call loads.
// A load's error is returned as it is, to its caller and to those who waited for it, and is
// not cached.
func (c *refreshCache[K, V]) get(ctx context.Context, key K, load func(context.Context) (V, error)) (V, error) {
	if c.ttl <= 0 {
		return load(ctx)
	}
	for {
		now := time.Now()
		c.mu.Lock()
		e, cached := c.entries[key]
		if cached && now.Before(e.refreshAt) && now.Before(e.expires) {
			// The usual case: one map lookup under the lock.
			c.mu.Unlock()
			return e.value, nil
		}
		pending := c.loads[key]
		if cached && now.Before(e.expires) {
			if pending != nil {
				c.mu.Unlock()
				return e.value, nil
			}
			// Due for a refresh, and nobody is at it: this caller reloads while the others
			// keep using the entry, which is still valid. If the reload fails the entry
			// serves until it expires.
			p := c.startLoad(key)
			c.mu.Unlock()
			v, err := c.runLoad(ctx, key, p, load)
			if err != nil && time.Now().Before(e.expires) {
				return e.value, nil
			}
			return v, err
		}
		if pending == nil {
			p := c.startLoad(key)
			c.mu.Unlock()
			return c.runLoad(ctx, key, p, load)
		}
		c.mu.Unlock()
		select {
		case <-pending.done:
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
		if !pending.callerGone && now.Sub(pending.began) < c.ttl {
			return pending.value, pending.err
		}
		// The load failed only because its caller went away, or it began more than ttl before
		// this caller looked (a slow store): it may have read the key before a change made
		// more than ttl ago, which this caller must see. Look again, and load if need be.
	}
}

// peek returns key's value if the cache holds it and it has not expired, without loading it
// or refreshing it.
func (c *refreshCache[K, V]) peek(key K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok && time.Now().Before(e.expires) {
		return e.value, true
	}
	var zero V
	return zero, false
}

// startLoad registers a load of key, which the caller must then run with runLoad. c.mu is held.
func (c *refreshCache[K, V]) startLoad(key K) *pendingLoad[V] {
	p := &pendingLoad[V]{done: make(chan struct{}), generation: c.generation, began: time.Now()}
	c.loads[key] = p
	return p
}

// runLoad runs p's load, stores its value unless an invalidation came in the meantime, and lets
// the callers waiting for it go.
func (c *refreshCache[K, V]) runLoad(ctx context.Context, key K, p *pendingLoad[V], load func(context.Context) (V, error)) (V, error) {
	began := p.began
	completed := false
	defer func() {
		// Also when load panics, so that its waiters are not left waiting.
		c.mu.Lock()
		if c.loads[key] == p {
			delete(c.loads, key)
		}
		if completed && p.err == nil && c.generation == p.generation {
			c.putLocked(key, &refreshEntry[V]{value: p.value, refreshAt: began.Add(c.ttl - c.ttl/4), expires: began.Add(c.ttl)})
		}
		p.callerGone = !completed || (p.err != nil && ctx.Err() != nil)
		c.mu.Unlock()
		close(p.done)
	}()
	p.value, p.err = load(ctx)
	completed = true
	return p.value, p.err
}

// putLocked stores an entry. When the cache is full it first drops expired entries; if it is
// still full, the entry is not cached (the value is still returned, uncached). c.mu is held.
func (c *refreshCache[K, V]) putLocked(key K, e *refreshEntry[V]) {
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		now := time.Now()
		if now.Before(c.nextSweep) {
			return
		}
		c.nextSweep = now.Add(c.ttl)
		for k, v := range c.entries {
			if !now.Before(v.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= c.max {
			return
		}
	}
	c.entries[key] = e
}

// invalidate drops key after a change made through this instance. A load of it already under
// way is forgotten: its waiters get what it read, and callers from now on load again.
func (c *refreshCache[K, V]) invalidate(key K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	delete(c.entries, key)
	delete(c.loads, key)
}

// invalidateAll drops every entry, as invalidate does one.
func (c *refreshCache[K, V]) invalidateAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	clear(c.entries)
	clear(c.loads)
}
