package server

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedLoader is a load function for refreshCache tests: it counts its calls, returns the
// value (or error) set at the time of the call, and, while held, blocks each call until the
// gate opens or the caller's context ends.
type gatedLoader struct {
	mu      sync.Mutex
	calls   int
	value   string
	err     error
	gate    chan struct{} // nil: not held
	entered chan struct{} // receives once per call that reached the gate
}

func newGatedLoader(value string) *gatedLoader {
	return &gatedLoader{value: value, entered: make(chan struct{}, 100)}
}

func (l *gatedLoader) load(ctx context.Context) (string, error) {
	l.mu.Lock()
	l.calls++
	value, err, gate := l.value, l.err, l.gate
	l.mu.Unlock()
	if gate != nil {
		l.entered <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return value, err
}

func (l *gatedLoader) set(value string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.value, l.err = value, err
}

// hold makes the next calls block until the returned function opens the gate.
func (l *gatedLoader) hold() (open func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gate := make(chan struct{})
	l.gate = gate
	return func() {
		l.mu.Lock()
		l.gate = nil
		l.mu.Unlock()
		close(gate)
	}
}

func (l *gatedLoader) callCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// waitEntered waits for a call to reach the gate.
func (l *gatedLoader) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-l.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no load reached the gate")
	}
}

type getResult struct {
	value string
	err   error
}

// getAsync runs c.get in a goroutine; its answer arrives on the returned channel.
func getAsync(ctx context.Context, c *refreshCache[string, string], key string, l *gatedLoader) <-chan getResult {
	out := make(chan getResult, 1)
	go func() {
		v, err := c.get(ctx, key, l.load)
		out <- getResult{v, err}
	}()
	return out
}

func receive(t *testing.T, ch <-chan getResult) getResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("get did not return")
		return getResult{}
	}
}

// waitInGet waits until n goroutines started by getAsync are inside get. A caller inside get
// while a held load is pending is sure to wait for that load; a sleep could not be sure of it
// on a loaded machine, where a caller that arrived after the load ended would load again.
func waitInGet(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		in := 0
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, "refreshCache[...]).get(") && strings.Contains(g, "getAsync") {
				in++
			}
		}
		if in >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d callers inside get", in, n)
		}
	}
}

// settle gives goroutines just started time to reach the point they block at. The tests
// below cannot pass because of it: a caller that arrives late only makes them check less.
func settle() { time.Sleep(30 * time.Millisecond) }

// TestRefreshCacheSharesOneLoad: callers that find a key missing while it is being loaded wait
// for that load instead of each reading the store, and all get its value.
func TestRefreshCacheSharesOneLoad(t *testing.T) {
	c := newRefreshCache[string, string](time.Hour, 100)
	l := newGatedLoader("v1")
	open := l.hold()
	first := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t)
	var others []<-chan getResult
	for range 20 {
		others = append(others, getAsync(t.Context(), c, "k", l))
	}
	settle()
	if n := l.callCount(); n != 1 {
		t.Fatalf("%d loads while one was under way, want 1", n)
	}
	open()
	for _, ch := range append(others, first) {
		if r := receive(t, ch); r.err != nil || r.value != "v1" {
			t.Errorf("get = %q, %v; want v1", r.value, r.err)
		}
	}
	if n := l.callCount(); n != 1 {
		t.Errorf("%d loads for 21 callers, want 1", n)
	}
}

// TestRefreshCacheRefreshesAhead: once three quarters of the TTL have passed, one caller
// reloads the key while the others keep getting the cached value at once; the reloaded value
// then replaces it. A reload that fails leaves the entry serving until it expires.
func TestRefreshCacheRefreshesAhead(t *testing.T) {
	c := newRefreshCache[string, string](time.Hour, 100)
	l := newGatedLoader("v1")
	if v, err := c.get(t.Context(), "k", l.load); err != nil || v != "v1" {
		t.Fatalf("get = %q, %v", v, err)
	}
	e := c.entries["k"]
	if e.expires.Sub(e.refreshAt) != time.Hour/4 {
		t.Fatalf("refreshAt %v, expires %v: want the refresh a quarter of the TTL before expiry", e.refreshAt, e.expires)
	}
	e.refreshAt = time.Now().Add(-time.Second) // as if 3/4 of the TTL had passed

	l.set("v2", nil)
	open := l.hold()
	refresher := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t)
	// While the refresh runs, others are answered from the entry, without waiting or loading.
	for range 10 {
		if r := receive(t, getAsync(t.Context(), c, "k", l)); r.err != nil || r.value != "v1" {
			t.Fatalf("get during the refresh = %q, %v; want the cached v1", r.value, r.err)
		}
	}
	if n := l.callCount(); n != 2 {
		t.Fatalf("%d loads, want 2 (the first, and one refresh)", n)
	}
	open()
	if r := receive(t, refresher); r.err != nil || r.value != "v2" {
		t.Fatalf("refreshing get = %q, %v; want v2", r.value, r.err)
	}
	if v, _ := c.get(t.Context(), "k", l.load); v != "v2" {
		t.Fatalf("after the refresh get = %q, want v2", v)
	}
	if n := l.callCount(); n != 2 {
		t.Fatalf("%d loads after the refresh, want 2", n)
	}

	// A failed refresh: the caller that tried still gets the valid entry, and so do the others.
	c.entries["k"].refreshAt = time.Now().Add(-time.Second)
	l.set("", errors.New("store down"))
	for range 3 {
		if v, err := c.get(t.Context(), "k", l.load); err != nil || v != "v2" {
			t.Fatalf("get with the refresh failing = %q, %v; want the valid v2", v, err)
		}
	}
	// But not once it has expired: then the caller loads, and gets the store's error.
	c.entries["k"].expires = time.Now().Add(-time.Second)
	if _, err := c.get(t.Context(), "k", l.load); err == nil || err.Error() != "store down" {
		t.Fatalf("get of an expired entry with the store down: err %v, want the store's", err)
	}
}

// TestRefreshCacheExpiredWaits: an expired entry is not used while it is reloaded; callers wait
// for the load, or until their context ends.
func TestRefreshCacheExpiredWaits(t *testing.T) {
	c := newRefreshCache[string, string](time.Hour, 100)
	l := newGatedLoader("v1")
	c.get(t.Context(), "k", l.load)
	c.entries["k"].expires = time.Now().Add(-time.Second)
	l.set("v2", nil)
	open := l.hold()
	loader := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t)
	waiter := getAsync(t.Context(), c, "k", l)
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if r := receive(t, getAsync(short, c, "k", l)); !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("a caller whose context ended while waiting got %q, %v; want its context's error", r.value, r.err)
	}
	select {
	case r := <-waiter:
		t.Fatalf("a caller got %q, %v before the load ended; want it to wait", r.value, r.err)
	default:
	}
	open()
	for _, ch := range []<-chan getResult{loader, waiter} {
		if r := receive(t, ch); r.err != nil || r.value != "v2" {
			t.Errorf("get = %q, %v; want the reloaded v2", r.value, r.err)
		}
	}
	if n := l.callCount(); n != 2 {
		t.Errorf("%d loads, want 2", n)
	}
}

// TestRefreshCacheSharesErrors: a load that fails fails the callers that waited for it too,
// with one read of the store, and is not cached. But when it failed only because its own caller
// went away, the others load for themselves instead of taking that caller's error.
func TestRefreshCacheSharesErrors(t *testing.T) {
	c := newRefreshCache[string, string](time.Hour, 100)
	l := newGatedLoader("")
	down := errors.New("store down")
	l.set("", down)
	open := l.hold()
	first := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t)
	waiter := getAsync(t.Context(), c, "k", l)
	waitInGet(t, 2) // the waiter waits for the held load: it must share its error, not load
	open()
	for _, ch := range []<-chan getResult{first, waiter} {
		if r := receive(t, ch); !errors.Is(r.err, down) {
			t.Errorf("get = %q, %v; want the store's error", r.value, r.err)
		}
	}
	if n := l.callCount(); n != 1 {
		t.Errorf("%d loads, want 1", n)
	}
	if _, ok := c.entries["k"]; ok {
		t.Error("a failed load was cached")
	}

	// The caller running the load goes away; the one waiting loads for itself, and succeeds.
	l.set("v1", nil)
	open = l.hold()
	leaving, leave := context.WithCancel(t.Context())
	gone := getAsync(leaving, c, "k", l)
	l.waitEntered(t)
	waiter = getAsync(t.Context(), c, "k", l)
	settle()
	leave()
	if r := receive(t, gone); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the caller that left got %q, %v; want context.Canceled", r.value, r.err)
	}
	// The waiter's own load reaches the gate again (still held): let it through.
	l.waitEntered(t)
	open()
	if r := receive(t, waiter); r.err != nil || r.value != "v1" {
		t.Fatalf("the waiter got %q, %v; want its own load's v1", r.value, r.err)
	}
	if n := l.callCount(); n != 3 {
		t.Errorf("%d loads, want 3 (the failed one, the abandoned one, the waiter's)", n)
	}
}

// invalidateDuringLoad starts a load of "k" that reads "old" and holds it at the loader's gate,
// then invalidates "k". It returns the cache, the loader, the gate's opener and the stale
// caller's answer to come.
func invalidateDuringLoad(t *testing.T) (*refreshCache[string, string], *gatedLoader, func(), <-chan getResult) {
	t.Helper()
	c := newRefreshCache[string, string](time.Hour, 100)
	l := newGatedLoader("old")
	open := l.hold()
	stale := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t)
	c.invalidate("k")
	return c, l, open, stale
}

// TestRefreshCacheInvalidateDuringLoad: an invalidation while a load is under way is not
// undone by it. Callers from then on load afresh rather than wait for the old load, and the old
// load's value is not stored.
func TestRefreshCacheInvalidateDuringLoad(t *testing.T) {
	c, l, open, stale := invalidateDuringLoad(t)
	l.set("new", nil)
	fresh := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t) // a second load, not a wait for the first
	open()
	if r := receive(t, stale); r.value != "old" {
		t.Errorf("the caller that came before the change got %q, want what its load read", r.value)
	}
	if r := receive(t, fresh); r.value != "new" {
		t.Errorf("the caller after the change got %q, want new", r.value)
	}
	if v, _ := c.get(t.Context(), "k", l.load); v != "new" {
		t.Errorf("cached %q after both loads, want new", v)
	}
	if n := l.callCount(); n != 2 {
		t.Errorf("%d loads, want 2", n)
	}

	// invalidateAll forgets every key.
	c.invalidateAll()
	l.set("newer", nil)
	if v, _ := c.get(t.Context(), "k", l.load); v != "newer" {
		t.Errorf("after invalidateAll get = %q, want newer", v)
	}
}

// TestRefreshCacheOff: with a TTL of zero every call loads.
func TestRefreshCacheOff(t *testing.T) {
	c := newRefreshCache[string, string](0, 100)
	var calls atomic.Int32
	for range 5 {
		c.get(t.Context(), "k", func(context.Context) (string, error) { calls.Add(1); return "v", nil })
	}
	if n := calls.Load(); n != 5 {
		t.Errorf("%d loads for 5 calls with the cache off, want 5", n)
	}
}

// TestRefreshCacheLoadAcrossInvalidationNotStored: a load that began before an invalidation
// answers its own caller but is not cached, even when no other load follows it.
func TestRefreshCacheLoadAcrossInvalidationNotStored(t *testing.T) {
	c, _, open, stale := invalidateDuringLoad(t)
	open()
	if r := receive(t, stale); r.value != "old" {
		t.Fatalf("the caller got %q, want what its load read", r.value)
	}
	if e, ok := c.entries["k"]; ok {
		t.Fatalf("a load from before the invalidation was cached: %q", e.value)
	}
}

// TestRefreshCacheWaiterGetsNoValueOlderThanTTL: a caller that arrives while a load is under
// way shares it only if that load began within the TTL. A load that began longer ago (a slow
// store, or a token's last-use write waiting for a lock) may have read the key before a change
// made through another instance more than a TTL before this caller asked: taking its value
// would break the bound (a token revoked elsewhere, a secret retired elsewhere, still honoured
// beyond --token-cache-ttl / --cache-ttl). Such a caller loads again instead.
func TestRefreshCacheWaiterGetsNoValueOlderThanTTL(t *testing.T) {
	const ttl = 100 * time.Millisecond
	c := newRefreshCache[string, string](ttl, 100)
	l := newGatedLoader("before")
	open := l.hold()
	first := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t) // the first load has read "before" and is stuck
	l.set("after", nil)
	time.Sleep(ttl + 50*time.Millisecond) // the change is now more than a TTL old
	late := getAsync(t.Context(), c, "k", l)
	settle()
	open()
	if r := receive(t, first); r.err != nil || r.value != "before" {
		t.Errorf("first caller: %q, %v; want before (its own load)", r.value, r.err)
	}
	if r := receive(t, late); r.err != nil || r.value != "after" {
		t.Errorf("caller arriving a TTL after the change: %q, %v; want after", r.value, r.err)
	}
}

// TestRefreshCacheFailedRefreshPastExpiryIsAnError: a refresh that began while the entry was
// valid but failed after it expired gives its caller the store's error, not the entry: the
// bound is that no entry is used once the TTL has passed since its read began, whatever a
// slow store does meanwhile.
func TestRefreshCacheFailedRefreshPastExpiryIsAnError(t *testing.T) {
	c := newRefreshCache[string, string](time.Hour, 100)
	l := newGatedLoader("v1")
	if v, err := c.get(t.Context(), "k", l.load); err != nil || v != "v1" {
		t.Fatalf("get = %q, %v", v, err)
	}
	c.entries["k"].refreshAt = time.Now().Add(-time.Second) // due for a refresh, still valid
	l.set("", errors.New("store down"))
	open := l.hold()
	refresher := getAsync(t.Context(), c, "k", l)
	l.waitEntered(t)
	// The entry expires while the refresh is under way (the gate orders this write before
	// the refresher reads it).
	c.mu.Lock()
	c.entries["k"].expires = time.Now().Add(-time.Second)
	c.mu.Unlock()
	open()
	if r := receive(t, refresher); r.err == nil || r.err.Error() != "store down" {
		t.Fatalf("a refresh that failed after the entry expired gave %q, %v; want the store's error", r.value, r.err)
	}
}

// TestRefreshCachePeekIgnoresExpiredEntries: peek, which never loads, answers only from an
// entry that has not expired: its callers (the inbox's endpoint checks, endpointRow) must not
// act on what the store held more than the TTL ago.
func TestRefreshCachePeekIgnoresExpiredEntries(t *testing.T) {
	c := newRefreshCache[string, string](time.Hour, 100)
	l := newGatedLoader("v1")
	if _, err := c.get(t.Context(), "k", l.load); err != nil {
		t.Fatal(err)
	}
	if v, ok := c.peek("k"); !ok || v != "v1" {
		t.Fatalf("peek of a valid entry = %q, %v; want v1", v, ok)
	}
	c.entries["k"].expires = time.Now().Add(-time.Second)
	if v, ok := c.peek("k"); ok {
		t.Fatalf("peek of an expired entry = %q; want nothing", v)
	}
}
