package client_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// pushbackServer answers every call with code and, when hint > 0, a RetryInfo of hint, until
// it has failed failures times; then it answers with an empty message.
func pushbackServer(t *testing.T, code codes.Code, hint time.Duration, failures int64) (addr string, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	g := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		if calls.Add(1) <= failures {
			st := status.New(code, "scripted")
			if hint > 0 {
				st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(hint)})
			}
			return st.Err()
		}
		return stream.SendMsg(&emptypb.Empty{})
	}))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return lis.Addr().String(), calls
}

// TestRetryHonoursServerRetryInfo: the server's backpressure answer (RESOURCE_EXHAUSTED with a
// RetryInfo of 30 s) says when a new event may succeed. The inbox limits are checked against a
// snapshot refreshed every second, so retrying it within the 5 s budget 100 ms later only
// repeats the signature check on a server that is already overloaded, and counts every retry in
// hookverify_backpressure_total as if it were another delivery turned away. The client must
// give the error back at once when the hint does not fit its budget.
func TestRetryHonoursServerRetryInfo(t *testing.T) {
	t.Parallel()
	addr, calls := pushbackServer(t, codes.ResourceExhausted, 30*time.Second, 100)
	conn := dial(t, addr) // the default policy, as hookverify edge uses it
	start := time.Now()
	_, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("err %v, want RESOURCE_EXHAUSTED", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls against a 30 s retry hint, want 1 (the hint does not fit the retry budget)", n)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v; the answer should come back at once", took)
	}
}

// TestRetryWaitsForShortRetryInfo: a hint that fits the budget is waited out before the retry,
// never undercut by a shorter jittered backoff.
func TestRetryWaitsForShortRetryInfo(t *testing.T) {
	t.Parallel()
	const hint = 300 * time.Millisecond
	addr, calls := pushbackServer(t, codes.ResourceExhausted, hint, 1)
	conn := dial(t, addr, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxElapsed: 5 * time.Second}))
	start := time.Now()
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	if took := time.Since(start); took < hint {
		t.Errorf("retried after %v, before the server's hint of %v", took, hint)
	}
}

// TestRetryWithoutHintUnchanged: UNAVAILABLE without a hint is still retried with the policy's
// backoff.
func TestRetryWithoutHintUnchanged(t *testing.T) {
	t.Parallel()
	addr, calls := pushbackServer(t, codes.Unavailable, 0, 2)
	conn := dial(t, addr, client.WithRetry(client.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxElapsed: time.Second}))
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
}
