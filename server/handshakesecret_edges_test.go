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

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// lostModifyAnswer commits ModifyEndpoint, then answers as a connection reset does, while
// armed: the commit happened, its answer was lost.
type lostModifyAnswer struct {
	storage.Store
	armed atomic.Bool
}

func (s *lostModifyAnswer) ModifyEndpoint(ctx context.Context, id string, change storage.EndpointChange) (storage.Endpoint, error) {
	e, err := s.Store.ModifyEndpoint(ctx, id, change)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		return storage.Endpoint{}, fmt.Errorf("modify endpoint: %w", errors.Join(storage.ErrUnavailable, errors.New("connection reset")))
	}
	return e, err
}

// TestHandshakeConsumeAnswerLostIsNotRetried: when the transaction consuming the request for a
// handshake's secret fails, maybe after it committed, the handshake is answered with an error
// edges do not retry (not UNAVAILABLE): a retry would find the request consumed and echo the
// handshake, and Asana would sign with a secret nobody holds.
func TestHandshakeConsumeAnswerLostIsNotRetried(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.newDatabase(t)
		st := &lostModifyAnswer{Store: openStore(t, b, dsn)}
		e := newEnvOn(t, b, dsn, st)
		until := e.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "asana", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		st.armed.Store(true)
		resp, err := e.verifier.Verify(t.Context(), asanaHandshake("asana", "0123456789abcdef0123456789abcdef"))
		if err == nil {
			t.Fatalf("the handshake whose request was consumed without its secret kept was answered %v", resp)
		}
		if code := status.Code(err); code != codes.Internal {
			t.Fatalf("answered %v; want INTERNAL, which edges do not retry", err)
		}
	})
}

// TestHandshakeSecretKeptOnlyWithoutASecretInForce: an endpoint asking for a handshake's
// secret takes it when its secrets have all ended (a webhook created again after the old
// secret was retired), and takes nothing while one is in force: the handshake is
// unauthenticated, and a second secret would let its sender forge deliveries.
func TestHandshakeSecretKeptOnlyWithoutASecretInForce(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		until := e.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
		asks := map[string]string{protocol.HandshakeSecretUntilOption: until}
		const old = "0ld0123456789abcdef0123456789abcdef"

		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "inforce", Provider: "asana", Options: asks})
		e.addSecret(t, "inforce", old)
		_, _ = e.verifier.Verify(t.Context(), asanaHandshake("inforce", "forged0123456789abcdef0123456789ab"))
		if got := listSecrets(t, e.store, "inforce"); len(got) != 1 {
			t.Fatalf("an endpoint with a secret in force holds %d secrets after a handshake, want its own only", len(got))
		}

		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "retired", Provider: "asana", Options: asks})
		id := e.addSecret(t, "retired", old)
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "retired", SecretId: id}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		if _, err := e.verifier.Verify(t.Context(), asanaHandshake("retired", "new0123456789abcdef0123456789abcde")); err != nil {
			t.Fatalf("handshake to an endpoint whose secret was retired: %v", err)
		}
		if got := listSecrets(t, e.store, "retired"); len(got) != 2 {
			t.Fatalf("an endpoint whose only secret was retired holds %d secrets after the handshake it asked for, want 2", len(got))
		}
	})
}
