package server_test

import (
	"context"
	"sync"
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// countingStore is a real store that counts the reads the endpoint cache stands in for: the
// endpoint and its secrets (and, as a guard, the endpoint list), per method and endpoint id.
type countingStore struct {
	storage.Store
	mu    sync.Mutex
	calls map[string]int // "Method endpointID" (ListEndpoints: "ListEndpoints") -> calls
}

// countingEnv is an env on SQLite whose instances run on a countingStore, with options.
func countingEnv(t *testing.T, options func(*server.Options)) (*env, *countingStore) {
	t.Helper()
	b := backends[0]
	dsn := b.newDatabase(t)
	st := newCountingStore(openStore(t, b, dsn))
	e := newEnvOn(t, b, dsn, nil)
	e.store = st
	e.options = options
	return e, st
}

func newCountingStore(st storage.Store) *countingStore {
	return &countingStore{Store: st, calls: map[string]int{}}
}

func (c *countingStore) note(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls[key]++
}

// reads returns a copy of the counts so far.
func (c *countingStore) reads() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

func (c *countingStore) GetEndpoint(ctx context.Context, id string) (storage.Endpoint, error) {
	c.note("GetEndpoint " + id)
	return c.Store.GetEndpoint(ctx, id)
}

func (c *countingStore) ListSecrets(ctx context.Context, endpointID string) ([]storage.Secret, error) {
	c.note("ListSecrets " + endpointID)
	return c.Store.ListSecrets(ctx, endpointID)
}

func (c *countingStore) ListEndpoints(ctx context.Context) ([]storage.Endpoint, error) {
	c.note("ListEndpoints")
	return c.Store.ListEndpoints(ctx)
}

// wantReads fails unless exactly the reads in want (and no others) happened between the snapshots.
func wantReads(t *testing.T, what string, before, after map[string]int, want map[string]int) {
	t.Helper()
	got := countsSince(before, after)
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d %s call(s), want %d (all reads: %v)", what, got[k], k, n, got)
		}
	}
	for k, n := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %d unexpected %s call(s) (all reads: %v)", what, n, k, got)
		}
	}
}

// TestVerifyReadsSecretsFromTheCache proves that Verify does not read the endpoint and its
// secrets from the database per request: within the cache TTL, 100 deliveries (new events,
// redeliveries, forgeries, and deliveries to an unknown endpoint) cost one load of each, on the
// first request. It also proves the counting is real: once the TTL has passed, exactly one
// reload happens, and with the cache disabled every request reads.
//
// SQLite only: the cache sits above the store, so the backend makes no difference.
func TestVerifyReadsSecretsFromTheCache(t *testing.T) {
	t.Parallel()
	// cached: a long TTL, which nothing in the test outlives. short: a TTL the test sleeps
	// past. uncached: a negative TTL, which disables the cache. All three share the database.
	const shortTTL = 50 * time.Millisecond
	e, st := countingEnv(t, func(o *server.Options) { o.CacheTTL = time.Minute })
	cached := e.start(t, st)
	e.options = func(o *server.Options) { o.CacheTTL = shortTTL }
	short := e.start(t, st)
	e.options = func(o *server.Options) { o.CacheTTL = -1 }
	uncached := e.start(t, st)

	p := githubProvider
	const id, unknown = "cached", "nowhere"
	secret, secretID := cached.setup(t, p, id)
	forger := p.newSecret()

	// Part 1: 100 deliveries within the long TTL.
	before := st.reads()
	var accepted, duplicates, rejected, unknowns int
	var firsts []*hookverifyv1.VerifyResponse
	var reqs []*hookverifyv1.VerifyRequest
	for i := range 100 {
		switch {
		case i%10 == 3: // forged: signed with a secret the endpoint does not have
			cached.reject(t, e.deliver(t, p, id, eventID(p), forger), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)
			rejected++
		case i%10 == 7: // an endpoint that does not exist; absence is cached too
			cached.reject(t, e.deliver(t, p, unknown, eventID(p), secret), hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT)
			unknowns++
		case i%2 == 1 && len(reqs) > 0: // a redelivery of an earlier event, byte for byte
			k := i % len(reqs)
			resp := cached.duplicate(t, reqs[k], firsts[k])
			if resp.GetSecretId() != secretID {
				t.Errorf("duplicate authenticated by secret %q, want %q", resp.GetSecretId(), secretID)
			}
			duplicates++
		default: // a new event
			req := e.deliver(t, p, id, eventID(p), secret)
			resp := cached.accept(t, req)
			if resp.GetSecretId() != secretID {
				t.Errorf("accepted by secret %q, want %q", resp.GetSecretId(), secretID)
			}
			reqs, firsts = append(reqs, req), append(firsts, resp)
			accepted++
		}
	}
	if accepted+duplicates+rejected+unknowns != 100 || accepted == 0 || duplicates == 0 {
		t.Fatalf("mix: %d accepted, %d duplicates, %d forged, %d unknown; want 100 with each kind", accepted, duplicates, rejected, unknowns)
	}
	if n := e.count(t); n != int64(accepted) {
		t.Errorf("%d inbox records, want %d (one per accepted event)", n, accepted)
	}
	afterCached := st.reads()
	// One load per endpoint id, on its first request: the endpoint and its secrets for the
	// known one; the endpoint alone for the unknown one (no secrets to list).
	wantReads(t, "100 verifies within the TTL", before, afterCached, map[string]int{
		"GetEndpoint " + id:      1,
		"ListSecrets " + id:      1,
		"GetEndpoint " + unknown: 1,
	})
	t.Logf("100 verifies (%d accepted, %d duplicate, %d forged, %d unknown endpoint): reads %v",
		accepted, duplicates, rejected, unknowns, countsSince(before, afterCached))

	// Part 2: the short-TTL instance loads once, then reloads exactly once after the TTL. The
	// long-TTL instance, asked after the same sleep, still reads nothing.
	before = st.reads()
	short.accept(t, e.deliver(t, p, id, eventID(p), secret))
	warmed := st.reads()
	wantReads(t, "first verify on the short-TTL instance", before, warmed, map[string]int{
		"GetEndpoint " + id: 1,
		"ListSecrets " + id: 1,
	})
	time.Sleep(2 * shortTTL)
	cached.accept(t, e.deliver(t, p, id, eventID(p), secret))
	wantReads(t, "verify on the long-TTL instance after the sleep", warmed, st.reads(), nil)
	beforeReload := st.reads()
	short.accept(t, e.deliver(t, p, id, eventID(p), secret))
	afterReload := st.reads()
	wantReads(t, "verify on the short-TTL instance after its TTL", beforeReload, afterReload, map[string]int{
		"GetEndpoint " + id: 1,
		"ListSecrets " + id: 1,
	})
	t.Logf("short TTL: GetEndpoint %d -> %d, ListSecrets %d -> %d across the sleep",
		beforeReload["GetEndpoint "+id], afterReload["GetEndpoint "+id], beforeReload["ListSecrets "+id], afterReload["ListSecrets "+id])

	// Part 3: with the cache disabled every request reads both.
	before = st.reads()
	const n = 5
	for range n {
		uncached.accept(t, e.deliver(t, p, id, eventID(p), secret))
	}
	wantReads(t, "verifies with the cache disabled", before, st.reads(), map[string]int{
		"GetEndpoint " + id: n,
		"ListSecrets " + id: n,
	})
}
