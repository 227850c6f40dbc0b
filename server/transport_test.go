package server_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
)

// serveTCP starts a server with no store on a real loopback socket.
func serveTCP(t *testing.T) string {
	t.Helper()
	srv, err := server.New(server.Options{Keyring: testpki.Keyring(t), Protocols: protocol.Default()})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := srv.NewGRPCServer()
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

// TestStreamsPerConnectionAreBounded: one connection, no credentials, opens thousands of
// Verify streams, each announcing a message it never finishes, and reads nothing. Every stream
// the server takes costs a handler goroutine (and its buffered data) until the message
// completes, which it never does: without a bound on concurrent streams one unauthenticated
// client grows the server without end.
func TestStreamsPerConnectionAreBounded(t *testing.T) {
	addr := serveTCP(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Drain what the server sends on another goroutine, so that only the streams count (a
	// client that reads nothing gets the same from the limit: the server stops taking streams).
	go io.Copy(io.Discard, conn)
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, nil)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	const streams = 4000
	before := runtime.NumGoroutine()
	for i := range streams {
		hbuf.Reset()
		for _, f := range []hpack.HeaderField{
			{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"}, {Name: ":authority", Value: addr},
			{Name: ":path", Value: "/hookverify.v1.VerifierService/Verify"},
			{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"},
		} {
			enc.WriteField(f)
		}
		id := uint32(2*i + 1)
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true}); err != nil {
			break // the server closed the connection: bounded too
		}
		// A message of 1000 bytes announced, 10 sent.
		if err := fr.WriteData(id, false, append([]byte{0, 0, 0, 0x03, 0xe8}, make([]byte, 10)...)); err != nil {
			break
		}
	}
	// Let the server take what it will.
	deadline := time.Now().Add(5 * time.Second)
	peak := 0
	for time.Now().Before(deadline) {
		peak = max(peak, runtime.NumGoroutine()-before)
		time.Sleep(100 * time.Millisecond)
	}
	if peak > streams/2 {
		t.Fatalf("one connection holds %d more goroutines after opening %d streams it never finishes: concurrent streams are not bounded", peak, streams)
	}
}

// TestHeaderListSizeIsBounded: gRPC's own default lets a caller send 16 MiB of headers
// per stream, held until the stream ends, before authentication looks at any of it. No
// hookverify call needs more than a few KiB of metadata (a token, a request id, trace context).
func TestHeaderListSizeIsBounded(t *testing.T) {
	addr := serveTCP(t)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	health := healthpb.NewHealthClient(conn)
	// Small metadata passes (and settles the server's SETTINGS on the client).
	if _, err := health.Check(metadata.AppendToOutgoingContext(t.Context(), "x-request-id", "abc"), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatal(err)
	}
	big := metadata.AppendToOutgoingContext(t.Context(), "x-pad", strings.Repeat("a", 4<<20))
	if _, err := health.Check(big, &healthpb.HealthCheckRequest{}); err == nil {
		t.Fatal("a call with 4 MiB of metadata was taken")
	}
}

// TestSilentConnectionsAreClosed: a client that connects and never sends the HTTP/2
// preface (or never finishes a TLS handshake) holds a connection and a goroutine; gRPC's
// default waits 120 s for it. A real caller sends its preface in milliseconds.
func TestSilentConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	addr := serveTCP(t)
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Generous: the bound is well under this, on a loaded machine too.
	conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	start := time.Now()
	_, err = io.Copy(io.Discard, conn)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a connection that sent nothing was still open after %v", time.Since(start).Round(time.Second))
	}
}
