package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// RetryPolicy bounds the retries of calls that failed with UNAVAILABLE or RESOURCE_EXHAUSTED
// carrying RetryInfo (retryable says why only then).
// Before retry n (n = 1, 2, ...) the client sleeps a random time in [0, min(MaxBackoff,
// InitialBackoff·2^(n-1))) ("full jitter", so that edges retrying together spread out), or the
// server's RetryInfo hint when the error carries a longer one (as backpressure does). A retry
// is not started when its sleep would pass MaxElapsed since the first attempt or the context's
// deadline; the last error is returned instead.
type RetryPolicy struct {
	// MaxAttempts counts the first attempt; 1 means no retry.
	MaxAttempts    int
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// MaxElapsed bounds the time from the first attempt to the start of the last.
	MaxElapsed time.Duration
}

// DefaultRetryPolicy fits within the 8 s an edge has before providers such as GitHub (10 s)
// give up on the request.
var DefaultRetryPolicy = RetryPolicy{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second, MaxElapsed: 5 * time.Second}

func (p RetryPolicy) validate() error {
	if p.MaxAttempts < 1 || p.InitialBackoff < 0 || p.MaxBackoff < 0 || p.MaxElapsed < 0 {
		return fmt.Errorf("client: invalid retry policy %+v: MaxAttempts must be at least 1 and durations not negative", p)
	}
	return nil
}

// idempotentMethods are the calls a retry cannot duplicate: Verify (the claim is idempotent by
// event identity) and the reads of every service.
var idempotentMethods = map[string]bool{
	hookverifyv1.VerifierService_Verify_FullMethodName:       true,
	hookverifyv1.AdminService_GetEndpoint_FullMethodName:     true,
	hookverifyv1.AdminService_ListEndpoints_FullMethodName:   true,
	hookverifyv1.AdminService_ListSecrets_FullMethodName:     true,
	hookverifyv1.AdminService_ListProviders_FullMethodName:   true,
	hookverifyv1.AdminService_ListAuditEvents_FullMethodName: true,
	hookverifyv1.TokenService_ListTokens_FullMethodName:      true,
	hookverifyv1.InboxService_ListDeadLetters_FullMethodName: true,
	hookverifyv1.InboxService_GetInboxStats_FullMethodName:   true,
}

// retryable reports whether a failure is transient: the server (or its storage) is down or
// overloaded, and the same call may succeed later. RESOURCE_EXHAUSTED is overload only with a
// RetryInfo detail, as hookverify's backpressure sends it; without one it is gRPC refusing a
// message over the receive limit, which the same message can never pass.
func retryable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable:
		return true
	case codes.ResourceExhausted:
		return hasRetryInfo(err)
	}
	return false
}

// hasRetryInfo reports whether err carries a google.rpc.RetryInfo detail, valid or not: the mark
// of the server's backpressure.
func hasRetryInfo(err error) bool {
	for _, d := range status.Convert(err).Details() {
		if _, ok := d.(*errdetails.RetryInfo); ok {
			return true
		}
	}
	return false
}

// retryHint returns the delay of the RetryInfo detail err carries, if any.
func retryHint(err error) (time.Duration, bool) {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok && info.GetRetryDelay().IsValid() {
			return info.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}

// backoff returns the sleep before retry n (n ≥ 1).
func (p RetryPolicy) backoff(n int) time.Duration {
	ceiling := p.MaxBackoff
	// Compared before shifting, so that the shift cannot overflow, and a zero InitialBackoff
	// means no sleep rather than passing for an overflow.
	if n-1 < 63 && p.InitialBackoff <= p.MaxBackoff>>(n-1) {
		ceiling = p.InitialBackoff << (n - 1)
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling)
}

func (p RetryPolicy) interceptor() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if p.MaxAttempts <= 1 || !idempotentMethods[method] {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		start := time.Now()
		for attempt := 1; ; attempt++ {
			err := invoker(ctx, method, req, reply, cc, opts...)
			if err == nil || attempt >= p.MaxAttempts || !retryable(err) {
				return err
			}
			sleep := p.backoff(attempt)
			// The server's own hint (its backpressure answer carries one) says when the call
			// may succeed: retrying sooner only repeats the work on a server that asked for
			// time, and when the hint does not fit the budget the error goes back at once,
			// hint included, for the edge's Retry-After.
			if hint, ok := retryHint(err); ok && hint > sleep {
				sleep = hint
			}
			// Compared without adding to sleep: a hint past what a Duration holds comes as
			// the largest one, and the sum overflowed to a negative that passed.
			if sleep > p.MaxElapsed-time.Since(start) {
				return err
			}
			if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= sleep {
				return err
			}
			timer := time.NewTimer(sleep)
			select {
			case <-ctx.Done():
				timer.Stop()
				return err
			case <-timer.C:
			}
		}
	}
}
