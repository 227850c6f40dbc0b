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

// countingModifyEndpoint counts ModifyEndpoint calls: each is a write transaction (on SQLite,
// one at a time with every claim).
type countingModifyEndpoint struct {
	storage.Store
	modifies atomic.Int64
}

func (s *countingModifyEndpoint) ModifyEndpoint(ctx context.Context, id string, change storage.EndpointChange) (storage.Endpoint, error) {
	s.modifies.Add(1)
	return s.Store.ModifyEndpoint(ctx, id, change)
}

// TestHandshakeToAnEndpointNotAskingWritesNothing: the fresh read of an endpoint with no
// secret in force decides, before any write, that a handshake to an endpoint that does not ask
// for one (handshake_secret_until unset) is only echoed: a stream of unauthenticated handshakes
// to a new endpoint must not each open a write transaction. TestHandshakeFreshReadBounds
// counts only the reads.
func TestHandshakeToAnEndpointNotAskingWritesNothing(t *testing.T) {
	t.Parallel()
	b := backends[0]
	dsn := b.newDatabase(t)
	st := &countingModifyEndpoint{Store: openStore(t, b, dsn)}
	e := newEnvOn(t, b, dsn, nil)
	e.options = func(o *server.Options) { o.CacheTTL = time.Hour }
	e.store = st
	e.instance = e.start(t, st)
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "fresh", Provider: "asana"})
	before := st.modifies.Load()
	for range 5 {
		resp, err := e.verifier.Verify(t.Context(), asanaHandshake("fresh", "forged-0123456789abcdef"))
		if err != nil || resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE {
			t.Fatalf("handshake to an endpoint not asking: %v, %v; want it echoed", resp, err)
		}
	}
	if n := st.modifies.Load() - before; n != 0 {
		t.Errorf("handshakes to an endpoint that does not ask for a secret ran %d endpoint writes, want 0", n)
	}
	if list := listSecrets(t, st, "fresh"); len(list) != 0 {
		t.Fatalf("a handshake to an endpoint not asking was kept: %+v", list)
	}
}
