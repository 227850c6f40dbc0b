package client_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestDialRefusesNegativeRetryDurations: RetryPolicy says durations must not be negative, and
// Dial refuses such a policy at once. Accepted, a negative InitialBackoff retried without any
// sleep (every edge at once on an overloaded server) and a negative MaxElapsed never retried.
func TestDialRefusesNegativeRetryDurations(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]client.RetryPolicy{
		"InitialBackoff": {MaxAttempts: 3, InitialBackoff: -time.Millisecond, MaxBackoff: time.Second, MaxElapsed: time.Second},
		"MaxBackoff":     {MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: -time.Second, MaxElapsed: time.Second},
		"MaxElapsed":     {MaxAttempts: 3, InitialBackoff: time.Millisecond, MaxBackoff: time.Second, MaxElapsed: -time.Second},
	} {
		conn, err := client.Dial("127.0.0.1:1", client.WithRetry(p))
		if err == nil {
			conn.Close()
			t.Errorf("Dial accepted a negative %s: %+v", name, p)
		}
	}
}

// TestRetryCancelledWhileSleepingReturnsTheLastError: a context cancelled during the sleep
// before a retry ends the call with the last error, as RetryPolicy says ("the last error is
// returned instead"), the server's UNAVAILABLE, not a bare context error that maps to no
// gRPC code.
func TestRetryCancelledWhileSleepingReturnsTheLastError(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	f.fail("Verify", codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable, codes.Unavailable)
	// Sleeps of up to an hour: the cancel comes during the first one (bar a draw under a
	// moment in an hour, which only retries once more). It comes as the client ends its first
	// attempt (a stats handler sees each attempt end before the retry loop does), so it never
	// lands during a call however slow the machine: a timer could, and then the answer is
	// the call's own CANCELLED.
	slow := client.RetryPolicy{MaxAttempts: 5, InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxElapsed: 10 * time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := dial(t, f.start(t), client.WithRetry(slow), client.WithGRPCOptions(grpc.WithStatsHandler(cancelOnAttemptEnd{cancel})))
	done := make(chan error, 1)
	go func() {
		_, err := conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"})
		done <- err
	}()
	// Only a guard against hanging the package for its whole timeout, were the handler never
	// to cancel (the sleep is up to an hour): the answer comes at the first attempt's end.
	select {
	case err := <-done:
		if status.Code(err) != codes.Unavailable {
			t.Errorf("err %v (code %v), want the last UNAVAILABLE", err, status.Code(err))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("Verify still sleeping after 2 minutes (%d calls): the stats handler never cancelled", f.count("Verify"))
	}
}

// cancelOnAttemptEnd is a client stats handler that cancels a context when an attempt of a
// Verify call ends in an error (the handler hears of it before the attempt's caller does).
// Other RPCs on the connection, such as the health checks, are left alone.
type cancelOnAttemptEnd struct{ cancel context.CancelFunc }

type verifyAttemptKey struct{}

func (h cancelOnAttemptEnd) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, verifyAttemptKey{}, info.FullMethodName == hookverifyv1.VerifierService_Verify_FullMethodName)
}

func (h cancelOnAttemptEnd) HandleRPC(ctx context.Context, s stats.RPCStats) {
	verify, _ := ctx.Value(verifyAttemptKey{}).(bool)
	if end, ok := s.(*stats.End); ok && verify && end.Client && end.Error != nil {
		h.cancel()
	}
}

func (cancelOnAttemptEnd) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}

func (cancelOnAttemptEnd) HandleConn(context.Context, stats.ConnStats) {}

// TestRetryIgnoresAnInvalidRetryInfoDelay: a RetryInfo whose delay is not a valid duration
// (here seconds and nanos of opposite signs) is no hint: the call is still retried on the
// policy's own backoff, rather than read as a wait of an hour that does not fit the budget and
// returned at once.
func TestRetryIgnoresAnInvalidRetryInfoDelay(t *testing.T) {
	t.Parallel()
	addr, calls := pushbackServerOf(t, codes.ResourceExhausted, &durationpb.Duration{Seconds: 3600, Nanos: -1}, 1)
	conn := dial(t, addr, client.WithRetry(fastRetry))
	if _, err := conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}); err != nil {
		t.Errorf("err %v, want success on the retry", err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
}

// TestRetryPastTheDeadlineReturnsAtOnce: when the sleep before a retry (here the server's
// minute-long RetryInfo) would pass the context's deadline, the error comes back at once, so that the
// edge answers the provider (with Retry-After) in time, not when the deadline runs out.
func TestRetryPastTheDeadlineReturnsAtOnce(t *testing.T) {
	t.Parallel()
	addr, calls := pushbackServer(t, codes.ResourceExhausted, time.Minute, 100)
	p := client.RetryPolicy{MaxAttempts: 5, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxElapsed: time.Hour}
	conn := dial(t, addr, client.WithRetry(p))
	// A deadline of 30 s, well within MaxElapsed and well past a call on a loaded machine: the
	// answer must come long before it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("err %v, want the RESOURCE_EXHAUSTED with its hint", err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("returned after %v, not at once: it waited for the deadline", took.Round(time.Millisecond))
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
}
