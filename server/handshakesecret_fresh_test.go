package server_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// setHandshakeOption sets handshake_secret_until on endpoint id through in.
func setHandshakeOption(t *testing.T, in *instance, id, until string) {
	t.Helper()
	got, err := in.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	ep := proto.CloneOf(got.GetEndpoint())
	if ep.Options == nil {
		ep.Options = map[string]string{}
	}
	ep.Options[protocol.HandshakeSecretUntilOption] = until
	ep.UpdateTime = nil
	if _, err := in.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: ep}); err != nil {
		t.Fatal(err)
	}
}

func listSecrets(t *testing.T, st storage.Store, id string) []storage.Secret {
	t.Helper()
	list, err := st.ListSecrets(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// TestHandshakeSecretOptionSetElsewhereIsSeenAtOnce: the operator sets
// handshake_secret_until through one instance, and Asana's handshake reaches another whose
// cache read the endpoint before (within --cache-ttl). The handshake must be kept: echoed
// without it, Asana creates its webhook signing with a secret nobody holds and that it shows
// nowhere else, and the operator must delete the webhook and start again.
func TestHandshakeSecretOptionSetElsewhereIsSeenAtOnce(t *testing.T) {
	t.Parallel()
	b := backends[0]
	e := newEnvWith(t, b, func(o *server.Options) { o.CacheTTL = time.Hour })
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "asana", Provider: "asana"})
	other := e.start(t, e.store)
	// other caches the endpoint, which does not ask yet: a handshake now is echoed, not kept.
	resp, err := other.verifier.Verify(t.Context(), asanaHandshake("asana", "early-handshake-secret-0123456789"))
	if err != nil || resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE {
		t.Fatalf("handshake before the option: %v, %v", resp, err)
	}
	if list := listSecrets(t, e.store, "asana"); len(list) != 0 {
		t.Fatalf("a handshake before the option was kept: %+v", list)
	}
	setHandshakeOption(t, e.instance, "asana", e.clock.Now().Add(5*time.Minute).Format(time.RFC3339))

	const real = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	resp, err = other.verifier.Verify(t.Context(), asanaHandshake("asana", real))
	if err != nil || resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE {
		t.Fatalf("handshake after the option: %v, %v", resp, err)
	}
	if list := listSecrets(t, e.store, "asana"); len(list) != 1 {
		t.Fatalf("the handshake after the option was set through another instance kept %d secrets, want 1: it was echoed from the cached endpoint", len(list))
	}
}

// countingGetEndpoint counts GetEndpoint calls and fails them as an unreachable database
// does while failing is set.
type countingGetEndpoint struct {
	storage.Store
	calls   atomic.Int64
	failing atomic.Bool
}

func (s *countingGetEndpoint) GetEndpoint(ctx context.Context, id string) (storage.Endpoint, error) {
	s.calls.Add(1)
	if s.failing.Load() {
		return storage.Endpoint{}, fmt.Errorf("get endpoint: %w", errors.Join(storage.ErrUnavailable, errors.New("connection reset")))
	}
	return s.Store.GetEndpoint(ctx, id)
}

// TestHandshakeFreshReadBounds: the read that bypasses the cache for a handshake is
// made only for an endpoint with no secret in force (a forged handshake to an endpoint in use
// costs no store read), and when it fails the handshake is not echoed (which would let Asana
// create a webhook whose secret may not be kept) but answered UNAVAILABLE, which edges retry:
// nothing was consumed.
func TestHandshakeFreshReadBounds(t *testing.T) {
	t.Parallel()
	b := backends[0]
	dsn := b.newDatabase(t)
	st := &countingGetEndpoint{Store: openStore(t, b, dsn)}
	e := newEnvOn(t, b, dsn, nil)
	e.options = func(o *server.Options) { o.CacheTTL = time.Hour }
	e.store = st
	e.instance = e.start(t, st)

	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "inuse", Provider: "asana"})
	e.addSecret(t, "inuse", "real-asana-secret-0123456789abcdef")
	e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "fresh", Provider: "asana"})
	for _, id := range []string{"inuse", "fresh"} { // cached
		if _, err := e.verifier.Verify(t.Context(), asanaHandshake(id, "first-0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	before := st.calls.Load()
	for range 5 {
		if _, err := e.verifier.Verify(t.Context(), asanaHandshake("inuse", "forged-0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.calls.Load() - before; n != 0 {
		t.Errorf("forged handshakes to an endpoint with a secret in force read the store %d times", n)
	}
	st.failing.Store(true)
	resp, err := e.verifier.Verify(t.Context(), asanaHandshake("fresh", "0123456789abcdef0123456789abcdef"))
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a handshake whose endpoint could not be read: %v, %v; want UNAVAILABLE", resp, err)
	}
}
