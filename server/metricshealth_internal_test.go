package server

import (
	"context"
	"log/slog"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestPanickedCallsAreCounted: recoverInterceptor, outside the metrics interceptor,
// answers a handler's panic with INTERNAL. The panic went through the metrics interceptor
// unrecorded, so hookverify_grpc_requests_total and the latency histogram missed exactly the
// calls that failed worst.
func TestPanickedCallsAreCounted(t *testing.T) {
	m := NewMetrics()
	s := &Server{}
	s.log = slog.New(slog.DiscardHandler)
	info := &grpc.UnaryServerInfo{FullMethod: hookverifyv1.VerifierService_Verify_FullMethodName}
	_, err := s.recoverInterceptor(context.Background(), nil, info, func(ctx context.Context, req any) (any, error) {
		return m.interceptor(ctx, req, info, func(context.Context, any) (any, error) { panic("boom") })
	})
	if err == nil {
		t.Fatal("the panic was not answered with an error")
	}
	got := counterSeries(t, m, "hookverify_grpc_requests_total", "code", codes.Internal.String())
	if got[info.FullMethod] != 1 {
		t.Errorf("hookverify_grpc_requests_total{code=Internal} after a panicking Verify = %v, want Verify at 1", got)
	}
}
