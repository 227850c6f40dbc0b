package server_test

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// echoProtocol is a test protocol: it signs nothing, answers a body of "handshake" with a
// handshake reply echoing the URL it was asked to verify, and otherwise accepts with the URL as
// the event id, so a test can see which URL the server handed the protocol.
func echoProtocol() *protocol.Protocol {
	return &protocol.Protocol{
		Name: "echo-test", DisplayName: "Echo", SignatureScheme: "none", IdentitySource: "the URL", NeedsURL: true, DocsURL: "https://example.com",
		ParseSecret: func(s string) ([]byte, error) { return []byte(s), nil },
		Verify: func(req *protocol.Request, keys []protocol.Key, _ protocol.Params) (protocol.Result, error) {
			if bytes.Equal(req.Body, []byte("handshake")) {
				return protocol.Result{Handshake: &protocol.Reply{Status: 200, Headers: protocol.Headers{{Name: "Content-Type", Value: "text/plain"}}, Body: []byte(req.URL)}}, nil
			}
			return protocol.Result{KeyID: keys[0].ID, EventID: req.URL}, nil
		},
		Sign:          func(protocol.SignInput, []string) (protocol.Headers, error) { return nil, nil },
		ExampleSecret: func() (string, string, error) { return "s", "s", nil },
	}
}

func TestHandshakeAndPublicURL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	registry, err := protocol.NewRegistry(echoProtocol(), protocol.Stripe())
	if err != nil {
		t.Fatal(err)
	}
	keyring, err := secretbox.NewKeyring(bytes.Repeat([]byte{3}, secretbox.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Keyring: keyring, Protocols: registry})
	if err != nil {
		t.Fatal(err)
	}
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv.SetStore(store)
	lis := bufconn.Listen(1 << 20)
	g := srv.NewGRPCServer()
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	cc, err := grpc.NewClient("passthrough:///bufnet", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	admin, verifier := hookverifyv1.NewAdminServiceClient(cc), hookverifyv1.NewVerifierServiceClient(cc)

	create := func(id string, options map[string]string) error {
		_, err := admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: id, Provider: "echo-test", Options: options}})
		if err == nil {
			_, err = admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: id, Secret: "s"})
		}
		return err
	}
	if err := create("direct", nil); err != nil {
		t.Fatal(err)
	}
	if err := create("proxied", map[string]string{server.PublicURLOption: "https://hooks.example.com/in"}); err != nil {
		t.Fatal(err)
	}

	t.Run("handshake is answered and not stored", func(t *testing.T) {
		resp, err := verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "direct", Body: []byte("handshake"), Method: "POST", Url: "https://edge.internal/x"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_HANDSHAKE || resp.GetReply().GetStatus() != 200 || string(resp.GetReply().GetBody()) != "https://edge.internal/x" {
			t.Fatalf("got %v", resp)
		}
		if n, err := store.CountDeliveries(ctx, ""); err != nil || n != 0 {
			t.Fatalf("a handshake stored %d deliveries (%v)", n, err)
		}
	})
	t.Run("public_url replaces the forwarded URL, keeping its query", func(t *testing.T) {
		resp, err := verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "proxied", Body: []byte("{}"), Method: "POST", Url: "http://10.0.0.7:8080/in?a=1&b=2"})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetEventId() != "https://hooks.example.com/in?a=1&b=2" {
			t.Fatalf("protocol saw URL %q", resp.GetEventId())
		}
	})
	t.Run("public_url is refused where the URL is not signed, or malformed", func(t *testing.T) {
		_, err := admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "s", Provider: "stripe", Options: map[string]string{server.PublicURLOption: "https://x.example.com/"}}})
		if err == nil {
			t.Fatal("stripe endpoint took public_url")
		}
		if err := create("bad", map[string]string{server.PublicURLOption: "not a url"}); err == nil {
			t.Fatal("malformed public_url accepted")
		}
	})
}
