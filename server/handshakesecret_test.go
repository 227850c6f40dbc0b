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
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// asanaHandshake is an Asana handshake carrying secret, to endpoint id.
func asanaHandshake(id, secret string) *hookverifyv1.VerifyRequest {
	return &hookverifyv1.VerifyRequest{EndpointId: id, Method: "POST", Url: "https://hooks.example.com/" + id,
		Headers: []*hookverifyv1.HeaderField{{Name: "X-Hook-Secret", Value: secret}}}
}

// TestHandshakeSecretNotKeptForEndpointDisabledElsewhere: an endpoint disabled through
// another instance, whose cache still holds it enabled (within --cache-ttl), must not take a
// handshake's secret: the transaction that consumes the request reads the endpoint as stored,
// and a disabled endpoint takes nothing.
func TestHandshakeSecretNotKeptForEndpointDisabledElsewhere(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		until := e.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "off", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		other := e.start(t, e.store)
		// other caches the endpoint, enabled: a delivery before any secret is UNAVAILABLE.
		body := []byte(`{"events":[]}`)
		hs, err := protocol.Asana().Sign(protocol.SignInput{Body: body}, []string{"some-secret-0123456789"})
		if err != nil {
			t.Fatal(err)
		}
		signed := &hookverifyv1.VerifyRequest{EndpointId: "off", Method: "POST", Url: "https://hooks.example.com/off", Body: body}
		for _, h := range hs {
			signed.Headers = append(signed.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
		}
		if _, err := other.verifier.Verify(t.Context(), signed); status.Code(err) != codes.Unavailable {
			t.Fatalf("a delivery before any secret: %v, want UNAVAILABLE", err)
		}
		got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "off"})
		if err != nil {
			t.Fatal(err)
		}
		ep := proto.CloneOf(got.GetEndpoint())
		ep.Disabled = true
		ep.UpdateTime = nil
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: ep}); err != nil {
			t.Fatal(err)
		}
		// The handshake reaches other within its cache's TTL.
		_, _ = other.verifier.Verify(t.Context(), asanaHandshake("off", "attacker-chosen-secret-0123456789"))
		list, err := e.store.ListSecrets(t.Context(), "off")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 0 {
			t.Fatalf("a disabled endpoint kept a handshake's secret: %+v", list)
		}
	})
}

// failingAddSecret fails AddSecret as an unreachable database does, while armed.
type failingAddSecret struct {
	storage.Store
	armed atomic.Bool
}

func (s *failingAddSecret) AddSecret(ctx context.Context, sec storage.Secret, check storage.SecretCheck) error {
	if s.armed.CompareAndSwap(true, false) {
		return fmt.Errorf("add secret: %w", errors.Join(storage.ErrUnavailable, errors.New("connection reset")))
	}
	return s.Store.AddSecret(ctx, sec, check)
}

// TestHandshakeSecretFailedKeepIsNotRetriedIntoAnEcho: when keeping the handshake's
// secret fails after the request was consumed, the answer must not be one an edge retries
// (the Go client and docs/clients.md retry UNAVAILABLE): the retry found the request consumed
// and answered HANDSHAKE, the secret echoed, so Asana created its webhook with a secret that
// no one holds and that it shows nowhere else.
func TestHandshakeSecretFailedKeepIsNotRetriedIntoAnEcho(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		dsn := b.newDatabase(t)
		st := &failingAddSecret{Store: openStore(t, b, dsn)}
		e := newEnvOn(t, b, dsn, st)
		until := e.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "asana", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		const real = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
		st.armed.Store(true)
		resp, err := e.verifier.Verify(t.Context(), asanaHandshake("asana", real))
		if err == nil {
			t.Fatalf("the handshake whose secret could not be kept was answered %v", resp)
		}
		if first := err; status.Code(first) == codes.Unavailable {
			// What an edge does with UNAVAILABLE (client.DefaultRetryPolicy): the same call again.
			resp, err := e.verifier.Verify(t.Context(), asanaHandshake("asana", real))
			list, lerr := e.store.ListSecrets(t.Context(), "asana")
			if lerr != nil {
				t.Fatal(lerr)
			}
			if err == nil && resp.GetVerdict() == hookverifyv1.Verdict_VERDICT_HANDSHAKE && len(list) == 0 {
				t.Fatalf("the first answer was UNAVAILABLE (%v), which edges retry, and the retry was echoed with no secret kept: Asana would create its webhook with a secret no one holds", status.Convert(first).Message())
			}
		}
	})
}
