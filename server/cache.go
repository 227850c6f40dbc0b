package server

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
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
// per request against the clock; only admin changes wait for the TTL. refreshCache says how
// concurrent callers share a load and how an endpoint in use is refreshed before it expires.
type endpointCache = refreshCache[string, *cachedEndpoint]

type cachedEndpoint struct {
	endpoint storage.Endpoint
	found    bool
	keys     []cachedKey
}

// cachedKey is one stored secret with its parsed key material (nil if it failed to open).
type cachedKey struct {
	secret   storage.Secret
	material []byte
	// unknownKey: the secret is sealed under a master key this server does not hold. Unlike a
	// corrupted row, that is this instance's configuration (a master-key rotation under way),
	// which a restart with the key fixes, while another instance may hold it already.
	unknownKey bool
}

func newEndpointCache(ttl time.Duration) *endpointCache {
	return newRefreshCache[string, *cachedEndpoint](ttl, maxCachedEndpoints)
}

// lookup returns the endpoint (found false when it does not exist) and its keys, from the cache
// or freshly loaded. Storage errors are returned as they are.
func (s *Server) lookup(ctx context.Context, st storage.Store, id string) (*cachedEndpoint, error) {
	return s.cache.get(ctx, id, func(ctx context.Context) (*cachedEndpoint, error) { return s.load(ctx, st, id) })
}

// load reads an endpoint and every secret of it, and opens and parses each secret once.
func (s *Server) load(ctx context.Context, st storage.Store, id string) (*cachedEndpoint, error) {
	e := &cachedEndpoint{}
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
	now := s.clock()
	for _, sec := range secrets {
		k := cachedKey{secret: sec}
		// An ended secret never authenticates again (an end only stays or moves earlier), so
		// it is not opened: its plaintext has no business in memory, and one under a master
		// key since lost (which rekey lists apart and README says needs nothing) logged an
		// ERROR at every load of its endpoint, once per TTL for ever.
		if !sec.EndedAt(now) {
			k.material, k.unknownKey = s.openSecret(ctx, prov, sec)
			if k.material != nil {
				s.metrics.secretInForce(id, sec.ID)
			}
		}
		e.keys = append(e.keys, k)
	}
	return e, nil
}

// openSecret decrypts and parses a stored secret. One that fails is logged and skipped (it can
// authenticate nothing), so a single corrupted row does not take the endpoint down; unknownKey
// reports that it failed only because its master key is not in this server's keyring.
func (s *Server) openSecret(ctx context.Context, prov *protocol.Protocol, sec storage.Secret) (material []byte, unknownKey bool) {
	plain, err := s.keyring.Open(sec.KeyID, sec.EndpointID, sec.ID, sec.Sealed)
	if err != nil {
		s.log.ErrorContext(ctx, "secret does not open", "endpoint", sec.EndpointID, "secret_id", sec.ID, "err", err)
		return nil, errors.Is(err, secretbox.ErrUnknownKey)
	}
	material, err = prov.ParseSecret(string(plain))
	if err != nil {
		s.log.ErrorContext(ctx, "stored secret does not parse", "endpoint", sec.EndpointID, "secret_id", sec.ID)
		return nil, false
	}
	return material, false
}

// validKeys returns the keys of the cached endpoint that authenticate at now, newest first.
func (e *cachedEndpoint) validKeys(now time.Time) []protocol.Key {
	keys := make([]protocol.Key, 0, len(e.keys))
	// Newest first (e.keys is in ListSecrets' order, oldest first): a delivery signed with
	// both secrets of a rotation (Stripe and Standard Webhooks send one signature per secret
	// while a rolled one lives on) is credited to the new secret, so that the old one's last
	// use stops moving once the provider signs with the new, as the rotation runbook reads it.
	// During an overlap the new secret is also the likelier signer: one HMAC, not two.
	for _, k := range slices.Backward(e.keys) {
		if k.material != nil && k.secret.ValidAt(now) {
			keys = append(keys, protocol.Key{ID: k.secret.ID, Material: k.material})
		}
	}
	return keys
}

// scheduledKeys returns the keys of the cached endpoint that start after now, newest first:
// not valid yet, but held, so that a delivery one of them signed can be told from a forgery.
func (e *cachedEndpoint) scheduledKeys(now time.Time) []protocol.Key {
	var keys []protocol.Key
	for _, k := range slices.Backward(e.keys) {
		if k.material != nil && !k.secret.EndedAt(now) && now.Before(k.secret.NotBefore) {
			keys = append(keys, protocol.Key{ID: k.secret.ID, Material: k.material})
		}
	}
	return keys
}

// unopenedKeyID returns the id of a secret valid at now that this server cannot open for want
// of its master key, or "" if there is none.
func (e *cachedEndpoint) unopenedKeyID(now time.Time) string {
	for _, k := range e.keys {
		if k.unknownKey && k.secret.ValidAt(now) {
			return k.secret.ID
		}
	}
	return ""
}
