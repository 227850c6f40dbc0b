package client_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// fakeServer is a VerifierService and AdminService on a real gRPC server that fails each method
// with the scripted codes, in order, before it succeeds, and records what it received. The
// retry and error-mapping tests need failures a real server cannot be made to produce on cue.
type fakeServer struct {
	hookverifyv1.UnimplementedVerifierServiceServer
	hookverifyv1.UnimplementedAdminServiceServer

	mu       sync.Mutex
	failures map[string][]codes.Code // by method name ("Verify", "AddSecret", ...)
	calls    map[string]int
	requests []*hookverifyv1.VerifyRequest
	metadata []metadata.MD
	// respond, when set, answers Verify once the scripted failures are used up.
	respond func(ctx context.Context, req *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error)
}

func newFakeServer() *fakeServer {
	return &fakeServer{failures: map[string][]codes.Code{}, calls: map[string]int{}}
}

// start serves f on a loopback port until the test ends and returns the address.
func (f *fakeServer) start(t testing.TB, opts ...grpc.ServerOption) string {
	t.Helper()
	g := grpc.NewServer(opts...)
	hookverifyv1.RegisterVerifierServiceServer(g, f)
	hookverifyv1.RegisterAdminServiceServer(g, f)
	return serveGRPC(t, g)
}

// serveGRPC serves g on a loopback port until the test ends and returns the address.
func serveGRPC(t testing.TB, g *grpc.Server) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String()
}

func (f *fakeServer) fail(method string, codes ...codes.Code) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = append(f.failures[method], codes...)
}

func (f *fakeServer) count(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// enter records a call and returns its scripted failure, if any.
func (f *fakeServer) enter(ctx context.Context, method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[method]++
	md, _ := metadata.FromIncomingContext(ctx)
	f.metadata = append(f.metadata, md)
	if left := f.failures[method]; len(left) > 0 {
		f.failures[method] = left[1:]
		return status.Errorf(left[0], "scripted %s", left[0])
	}
	return nil
}

func (f *fakeServer) Verify(ctx context.Context, req *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
	if err := f.enter(ctx, "Verify"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	respond := f.respond
	f.mu.Unlock()
	if respond != nil {
		return respond(ctx, req)
	}
	return &hookverifyv1.VerifyResponse{
		Verdict:      hookverifyv1.Verdict_VERDICT_ACCEPTED,
		OperationKey: "op_fake",
		Reply:        &hookverifyv1.HttpReply{Status: 200, Body: []byte(`{"status":"accepted"}`)},
	}, nil
}

func (f *fakeServer) AddSecret(ctx context.Context, _ *hookverifyv1.AddSecretRequest) (*hookverifyv1.AddSecretResponse, error) {
	if err := f.enter(ctx, "AddSecret"); err != nil {
		return nil, err
	}
	return &hookverifyv1.AddSecretResponse{}, nil
}

func (f *fakeServer) ListEndpoints(ctx context.Context, _ *hookverifyv1.ListEndpointsRequest) (*hookverifyv1.ListEndpointsResponse, error) {
	if err := f.enter(ctx, "ListEndpoints"); err != nil {
		return nil, err
	}
	return &hookverifyv1.ListEndpointsResponse{}, nil
}

// fastRetry keeps retry tests quick.
var fastRetry = client.RetryPolicy{MaxAttempts: 5, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: 5 * time.Second}
