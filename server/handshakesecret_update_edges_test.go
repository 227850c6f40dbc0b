package server_test

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// TestHandshakeTakingASecretIsAnUpdate: a handshake whose secret is kept consumes the
// endpoint's handshake option, which is a change of the endpoint: its update_time becomes the
// handshake's time (not a microsecond after the last update's), and an update
// made from a read before the handshake (the CLI's read-modify-write) is refused as
// ABORTED rather than silently putting the consumed option back and reopening the window in
// which anyone who knows the URL can hand over a secret.
func TestHandshakeTakingASecretIsAnUpdate(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		until := e.clock.Now().Add(5 * time.Minute).Format(time.RFC3339)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "hs", Provider: "asana", Options: map[string]string{protocol.HandshakeSecretUntilOption: until}})
		read, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "hs"})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		resp, err := e.verifier.Verify(t.Context(), asanaHandshake("hs", "asana-secret-0123456789abcdef"))
		if err != nil || resp.GetReply() == nil {
			t.Fatalf("handshake: %v, %v; want the echo", resp, err)
		}
		after, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "hs"})
		if err != nil {
			t.Fatal(err)
		}
		if _, still := after.GetEndpoint().GetOptions()[protocol.HandshakeSecretUntilOption]; still {
			t.Fatalf("option %s still set after the handshake", protocol.HandshakeSecretUntilOption)
		}
		if got, want := after.GetEndpoint().GetUpdateTime().AsTime(), e.clock.Now().UTC().Truncate(time.Microsecond); !got.Equal(want) {
			t.Fatalf("update_time %v after the handshake (%v before); want the handshake's time %v", got, read.GetEndpoint().GetUpdateTime().AsTime(), want)
		}
		stale := read.GetEndpoint()
		_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: stale})
		wantCode(t, err, codes.Aborted)
	})
}
