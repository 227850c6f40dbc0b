package server

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// DefaultCacheTTL bounds how stale an instance's view of endpoints and secrets may be: an
// endpoint or secret change made through another instance takes effect here within it. Changes
// made through this instance take effect at once.
const DefaultCacheTTL = 2 * time.Second

// maxCachedEndpoints bounds the cache. Unknown endpoint ids are cached too, so that a provider
// hammering a wrong URL costs one read per TTL; without a bound, callers choosing a new random
// id per request would grow the cache, and the server's memory, without limit.
const maxCachedEndpoints = 10000

// endpointCache keeps each endpoint with its secrets, opened and parsed, so that the verify hot
// path reads neither the database nor decrypts per request. Validity windows are still checked
// per request against the clock; only admin changes wait for the TTL. Expiry uses the real
// monotonic clock, not the injected one, so it works the same under a test's frozen clock.
type endpointCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]*cachedEndpoint
	max     int
	// nextSweep is when a full cache may next be swept of expired entries: at most once per
	// TTL, so that a full cache of live entries does not cost a full scan per miss.
	nextSweep time.Time
	// generation is bumped by every invalidation, so a load that raced with an admin change
	// is not stored over the newer state.
	generation uint64
}

type cachedEndpoint struct {
	endpoint storage.Endpoint
	found    bool
	keys     []cachedKey
	expires  time.Time
}

// cachedKey is one stored secret with its parsed key material (nil if it failed to open).
type cachedKey struct {
	secret   storage.Secret
	material []byte
}

func newEndpointCache(ttl time.Duration) *endpointCache {
	return &endpointCache{ttl: ttl, entries: map[string]*cachedEndpoint{}, max: maxCachedEndpoints}
}

// put stores a freshly loaded entry unless an invalidation happened since generation gen was
// read. When the cache is full it first drops expired entries; if it is still full, the entry
// is not cached (lookups still work, uncached).
func (c *endpointCache) put(id string, e *cachedEndpoint, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.generation != gen {
		return
	}
	if _, ok := c.entries[id]; !ok && len(c.entries) >= c.max {
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
	c.entries[id] = e
}

// invalidate drops an endpoint (all endpoints for "") after a change made through this instance.
func (c *endpointCache) invalidate(endpointID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	if endpointID == "" {
		clear(c.entries)
		return
	}
	delete(c.entries, endpointID)
}

// lookup returns the endpoint (found false when it does not exist) and its keys, from the cache
// or freshly loaded. Storage errors are returned as they are.
func (s *Server) lookup(ctx context.Context, st storage.Store, id string) (*cachedEndpoint, error) {
	c := s.cache
	if c.ttl > 0 {
		c.mu.Lock()
		e, ok := c.entries[id]
		gen := c.generation
		c.mu.Unlock()
		if ok && time.Now().Before(e.expires) {
			return e, nil
		}
		e, err := s.load(ctx, st, id)
		if err != nil {
			return nil, err
		}
		c.put(id, e, gen)
		return e, nil
	}
	return s.load(ctx, st, id)
}

// load reads an endpoint and every secret of it, and opens and parses each secret once.
func (s *Server) load(ctx context.Context, st storage.Store, id string) (*cachedEndpoint, error) {
	e := &cachedEndpoint{expires: time.Now().Add(s.cache.ttl)}
	endpoint, err := st.GetEndpoint(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return e, nil
	}
	if err != nil {
		return nil, err
	}
	e.endpoint, e.found = endpoint, true
	prov, ok := s.protocols.Lookup(endpoint.Provider)
	if !ok {
		return e, nil
	}
	secrets, err := st.ListSecrets(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, sec := range secrets {
		e.keys = append(e.keys, cachedKey{secret: sec, material: s.openSecret(ctx, prov, sec)})
	}
	return e, nil
}

// openSecret decrypts and parses a stored secret. One that fails is logged and skipped (it can
// authenticate nothing), so a single corrupted row does not take the endpoint down.
func (s *Server) openSecret(ctx context.Context, prov *protocol.Protocol, sec storage.Secret) []byte {
	plain, err := s.keyring.Open(sec.KeyID, sec.EndpointID, sec.ID, sec.Sealed)
	if err != nil {
		s.log.ErrorContext(ctx, "secret does not open", "endpoint", sec.EndpointID, "secret_id", sec.ID, "err", err)
		return nil
	}
	material, err := prov.ParseSecret(string(plain))
	if err != nil {
		s.log.ErrorContext(ctx, "stored secret does not parse", "endpoint", sec.EndpointID, "secret_id", sec.ID)
		return nil
	}
	return material
}

// validKeys returns the keys of the cached endpoint that authenticate at now.
func (e *cachedEndpoint) validKeys(now time.Time) []protocol.Key {
	keys := make([]protocol.Key, 0, len(e.keys))
	for _, k := range e.keys {
		if k.material != nil && k.secret.ValidAt(now) {
			keys = append(keys, protocol.Key{ID: k.secret.ID, Material: k.material})
		}
	}
	return keys
}
