package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestRetryHintTooLongForADurationIsNotSlept: a RetryInfo hint longer than a time.Duration
// holds (durationpb allows 10,000 years, a Duration about 292) became the largest Duration,
// and the budget check, time.Since(start)+sleep, overflowed to a negative sum that passed:
// a call without a deadline then slept for ever. It must come back at once, as a hint that
// does not fit the budget does.
func TestRetryHintTooLongForADurationIsNotSlept(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	g := grpc.NewServer(grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		if calls.Add(1) == 1 {
			st, _ := status.New(codes.ResourceExhausted, "scripted").WithDetails(&errdetails.RetryInfo{RetryDelay: &durationpb.Duration{Seconds: 315_576_000_000}})
			return st.Err()
		}
		return stream.SendMsg(&emptypb.Empty{})
	}))
	healthpb.RegisterHealthServer(g, health.NewServer())
	conn := dial(t, serveGRPC(t, g)) // the default policy
	done := make(chan error, 1)
	go func() {
		_, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"})
		done <- err
	}()
	select {
	case err := <-done:
		if status.Code(err) != codes.ResourceExhausted {
			t.Errorf("err %v, want the RESOURCE_EXHAUSTED with its hint", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("Verify still waiting after 3 s on a hint of 10,000 years (%d calls); the default budget is %v", calls.Load(), client.DefaultRetryPolicy.MaxElapsed)
	}
}
