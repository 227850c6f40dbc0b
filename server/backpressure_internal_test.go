package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestVerifyBytesRefusalNamesItsBound: a call refused by --max-verify-bytes is told the bound
// the server holds to. Counted in whole MiB, a bound under one MiB read "server holds 0 MiB of
// requests at once, its limit", which says nothing true to whoever reads the edge's log.
func TestVerifyBytesRefusalNamesItsBound(t *testing.T) {
	for _, c := range []struct {
		limit int64
		says  string
	}{{100_000, "100000 bytes"}, {64 << 20, "64 MiB"}} {
		s := &Server{verifyBytes: newByteBudget(c.limit)}
		s.verifyBytes.Take(c.limit, 0) // full
		_, err := s.boundVerifyBytes(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "gh", Body: []byte("{}")},
			&grpc.UnaryServerInfo{FullMethod: hookverifyv1.VerifierService_Verify_FullMethodName},
			func(context.Context, any) (any, error) {
				t.Fatal("a call past the bound reached the handler")
				return nil, nil
			})
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), c.says) {
			t.Errorf("bound %d: refusal %v; want RESOURCE_EXHAUSTED naming %q", c.limit, err, c.says)
		}
	}
}
