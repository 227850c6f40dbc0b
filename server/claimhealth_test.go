package server_test

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/storage"
)

// TestClaimCacheSilentWhileHealthIsDown: once the store's health check fails (here SQLite's
// database file or write-ahead log deleted under the server, which the store answers by
// refusing writes and DUPLICATE answers alike, since the claim is no longer durable), a
// redelivery of an event this instance remembers must not be answered DUPLICATE from memory:
// the provider would stop sending an event the restore from backup then lacks. Only
// redeliveries arrive, so no Verify store call fails: the health check is what tells.
func TestClaimCacheSilentWhileHealthIsDown(t *testing.T) {
	t.Parallel()
	for _, file := range []string{"", "-wal"} {
		t.Run("deleted hookverify.db"+file, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, backends[0])
			p := stripeProvider
			secret, _ := e.setup(t, p, "shop")
			known := e.deliver(t, p, "shop", eventID(p), secret)
			first := e.accept(t, known)
			e.duplicate(t, known, first) // remembered, endpoint cached

			if err := os.Remove(e.dsn + file); err != nil {
				t.Fatal(err)
			}
			e.srv.RefreshInboxDepth(t.Context())
			wantHealth(t, e.instance, healthpb.HealthCheckResponse_NOT_SERVING)
			resp, err := e.call(t, known)
			if status.Code(err) != codes.Unavailable {
				t.Fatalf("redelivery while health is NOT_SERVING (store refuses duplicates): Verify = %v, %v; want UNAVAILABLE", resp, err)
			}
		})
	}
}

// statsFailingStore is a claimCountingStore whose inbox statistics fail while fail is set:
// the health check fails while the store still answers claims.
type statsFailingStore struct {
	claimCountingStore
	fail atomic.Bool
}

func (s *statsFailingStore) InboxStats(ctx context.Context) ([]storage.EndpointInboxStats, error) {
	if s.fail.Load() {
		return nil, errors.New("connection refused")
	}
	return s.claimCountingStore.Store.InboxStats(ctx)
}

// TestClaimCacheResumesWithHealth: while the health check fails, a remembered redelivery is
// asked of the store (which answers it here: DUPLICATE, the same claim); once health is back,
// the cache answers again without the store.
func TestClaimCacheResumesWithHealth(t *testing.T) {
	t.Parallel()
	b := backends[0]
	dsn := b.newDatabase(t)
	st := &statsFailingStore{claimCountingStore: claimCountingStore{Store: openStore(t, b, dsn)}}
	e := newEnvOn(t, b, dsn, st)
	p := stripeProvider
	secret, _ := e.setup(t, p, "shop")
	known := e.deliver(t, p, "shop", eventID(p), secret)
	first := e.accept(t, known)

	st.fail.Store(true)
	e.srv.RefreshInboxDepth(t.Context())
	wantHealth(t, e.instance, healthpb.HealthCheckResponse_NOT_SERVING)
	before := st.claims.Load()
	e.duplicate(t, known, first)
	if n := st.claims.Load() - before; n != 1 {
		t.Errorf("redelivery while health is NOT_SERVING asked the store %d times, want once", n)
	}

	st.fail.Store(false)
	e.srv.RefreshInboxDepth(t.Context())
	wantHealth(t, e.instance, healthpb.HealthCheckResponse_SERVING)
	before = st.claims.Load()
	e.duplicate(t, known, first)
	if n := st.claims.Load() - before; n != 0 {
		t.Errorf("redelivery once health is SERVING again asked the store %d times, want 0 (the cache answers)", n)
	}
}
