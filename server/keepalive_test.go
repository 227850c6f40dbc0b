package server_test

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
)

// countingListener counts the connections it accepts.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// TestIdleClientsMayPing: clients ping idle connections (client.KeepaliveTime) so that NATs
// and load balancers dropping idle flows cannot leave them looking ready while dead. gRPC's
// default server policy sends such a client away (GOAWAY too_many_pings) after a few pings,
// so its connection would be made again and again. A client pinging as often as gRPC lets it
// (every 10 s), idle, keeps its one connection.
func TestIdleClientsMayPing(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits for four keepalive pings (about 45 s)")
	}
	keyring := testpki.Keyring(t)
	srv, err := server.New(server.Options{Keyring: keyring, Protocols: protocol.Default()})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &countingListener{Listener: inner}
	g := srv.NewGRPCServer()
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	conn, err := grpc.NewClient(inner.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: server.KeepaliveMinTime, Timeout: 5 * time.Second, PermitWithoutStream: true}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	if _, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	// gRPC's default policy counts a strike from the second ping of an idle connection and
	// sends the client away after the third strike: the fourth ping, at about 40 s.
	time.Sleep(4*server.KeepaliveMinTime + 5*time.Second)
	if _, err := health.Check(t.Context(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	if n := lis.accepted.Load(); n != 1 {
		t.Fatalf("the idle client pinging every %v was sent away: %d connections, want 1", server.KeepaliveMinTime, n)
	}
}
