package server_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// stalledClaims is a store whose claims wait until release closes: a database that has
// stopped answering commits (a failover, a lock, a full disk).
type stalledClaims struct {
	storage.Store
	release chan struct{}
}

func (s stalledClaims) Claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	select {
	case <-s.release:
	case <-ctx.Done():
		return storage.ClaimResult{}, ctx.Err()
	}
	return s.Store.Claim(ctx, d)
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC() // and the buffer pools' victims
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestVerifyBodiesHeldAtOnceAreBounded: while the database is slow, every Verify call waiting
// for its claim holds its body, and edges keep sending (a provider's deliveries do not wait).
// Without a bound on the bodies held at once, the server's memory grows with the traffic times
// the database's stall until the kernel kills it, losing every call in flight. Past the bound
// a call must be answered at once with RESOURCE_EXHAUSTED and a RetryInfo hint (the edge's
// 503 with Retry-After), and the heap stay within the bound.
func TestVerifyBodiesHeldAtOnceAreBounded(t *testing.T) {
	const (
		budget   = 64 << 20
		bodySize = 8 << 20
		calls    = 24 // 192 MiB of bodies
	)
	b := backends[0] // sqlite: the bound is the server's, not the store's
	dsn := b.newDatabase(t)
	release := make(chan struct{})
	st := stalledClaims{Store: openStore(t, b, dsn), release: release}
	metrics := server.NewMetrics()
	e := newEnvOnWith(t, b, dsn, st, func(o *server.Options) { o.MaxVerifyBytesInFlight = budget; o.Metrics = metrics })
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "big", Provider: githubProvider.name, MaxBodyBytes: 16 << 20})
	secret := githubProvider.newSecret()
	e.addSecret(t, "big", secret)

	before := heapInUse()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	errs := make(chan error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := randomBytes(bodySize)
			req := sign(t, githubProvider, "big", fmt.Sprintf("delivery-%d", i), body, e.clock.Now(), secret)
			_, err := e.verifier.Verify(ctx, req)
			errs <- err
		}()
	}
	// The calls past the bound must come back while the others still wait for the database.
	refused := 0
	deadline := time.After(15 * time.Second)
wait:
	for refused < calls-budget/bodySize {
		select {
		case err := <-errs:
			// The hint is 1 s (RELIABILITY.md), so that the edge's client retries it within
			// its 5 s budget rather than send the provider away.
			if hint, _ := retryHint(err); status.Code(err) != codes.ResourceExhausted || hint != time.Second {
				t.Fatalf("a call past the bound got %v (retry hint %v), want RESOURCE_EXHAUSTED with a 1 s hint", err, hint)
			}
			refused++
		case <-deadline:
			break wait
		}
	}
	// The calls still waiting hold their bodies on the client's side too.
	held := int64(heapInUse()) - int64(before) - int64(calls-refused)*bodySize
	t.Logf("%d calls refused; the server holds %d MiB while the database stalls", refused, held>>20)
	if refused < calls-budget/bodySize {
		t.Errorf("only %d of %d calls past the %d MiB bound were refused while the database stalled", refused, calls-budget/bodySize, budget>>20)
	}
	// Twice the bound: a received message's buffers and its decoded copy.
	if held > 2*budget+32<<20 {
		t.Errorf("the server held %d MiB of bodies at once, above its bound of %d MiB", held>>20, budget>>20)
	}
	close(release)
	wg.Wait()
	// Every refusal is counted, those after the count above too.
	close(errs)
	for err := range errs {
		if status.Code(err) == codes.ResourceExhausted {
			refused++
		}
	}
	wantMetrics(t, e.srv, fmt.Sprintf("hookverify_verify_bytes_refusals_total %d", refused))
}

// newEnvOnWith is newEnvOn with server options adjusted.
func newEnvOnWith(t *testing.T, b backend, dsn string, st storage.Store, options func(*server.Options)) *env {
	t.Helper()
	key, kr := mustKeyring(t)
	e := &env{backend: b, dsn: dsn, store: st, clock: &clock{now: epoch}, keyring: kr, masterKey: key,
		logs: &syncbuf.Buffer{}, transcript: &syncbuf.Buffer{}, options: options}
	e.instance = e.start(t, st)
	return e
}
