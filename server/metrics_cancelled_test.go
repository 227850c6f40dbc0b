package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// hangingClaimStore is a store whose claims do not answer until the caller gives up (a
// database that has slowed past the edge's deadline). It sends how long the first claim hung
// on hung; a later one is not waited for.
type hangingClaimStore struct {
	storage.Store
	hung chan time.Duration
}

func (s hangingClaimStore) Claim(ctx context.Context, _ storage.Delivery) (storage.ClaimResult, error) {
	start := time.Now()
	<-ctx.Done()
	select {
	case s.hung <- time.Since(start):
	default:
	}
	return storage.ClaimResult{}, ctx.Err()
}

// histogramCount returns the sample count and sum of the histogram family name.
func histogramCount(t *testing.T, m *server.Metrics, name string) (uint64, float64) {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			h := f.GetMetric()[0].GetHistogram()
			return h.GetSampleCount(), h.GetSampleSum()
		}
	}
	return 0, 0
}

// TestVerifyLatencyCountsCallsTheCallerGaveUpOn: HookverifyLatency alerts on the p99 of
// hookverify_verify_duration_seconds ("providers time out"), which counted answered calls
// only. A Verify that an edge cancels, or whose deadline (the edge's --verifier-timeout, 8 s
// by default) passes, is exactly one that was too slow, and went unmeasured: with every slow
// call cut off at the edge's deadline, the p99 was computed from the fast rest and the alert
// stayed quiet while providers got 503s. Such a call is measured until it ends.
func TestVerifyLatencyCountsCallsTheCallerGaveUpOn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		code codes.Code
		ctx  func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"deadline", codes.DeadlineExceeded, func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 200*time.Millisecond)
		}},
		{"cancelled", codes.Canceled, func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(ctx)
			time.AfterFunc(200*time.Millisecond, cancel)
			return ctx, cancel
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hung := make(chan time.Duration, 1)
			m, err := verifyOnceThrough(t, tc.ctx, func(st storage.Store) storage.Store { return hangingClaimStore{st, hung} })
			wantCode(t, err, tc.code)
			var claimHung time.Duration // none: the caller gave up before the claim began
			select {
			case claimHung = <-hung:
			case <-time.After(5 * time.Second):
			}
			// The server's handler ends a moment after the client has its error.
			var n uint64
			var sum float64
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				if n, sum = histogramCount(t, m, "hookverify_verify_duration_seconds"); n > 0 {
					break
				}
			}
			// The call lasted at least as long as its claim hung, however late a loaded machine
			// started it within the caller's 200 ms.
			if n != 1 || sum < claimHung.Seconds() {
				t.Errorf("hookverify_verify_duration_seconds after one Verify the caller gave up on: %d samples, sum %.3f s; want 1 sample of at least the %.3f s its claim hung", n, sum, claimHung.Seconds())
			}
		})
	}
}

// TestRedeliveriesHelpMatchesGivenBack: hookverify_inbox_redeliveries_total said it counted
// deliveries "leased again after a lease expired or a nack", but a delivery given back with a
// not_attempted nack is leased again on the same attempt and is not counted (no attempt was
// spent, the work was not done: it is no redelivery of work that may have run). The help must
// not promise what the count leaves out.
func TestRedeliveriesHelpMatchesGivenBack(t *testing.T) {
	t.Parallel()
	m := server.NewMetrics()
	e := newEnvWith(t, backends[0], func(o *server.Options) { o.Metrics = m })
	acceptSome(t, e, "work", 1)
	d := lease(t, e, 1, time.Minute)[0]
	if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
		RetryAfter: durationpb.New(0), NotAttempted: true}); err != nil {
		t.Fatal(err)
	}
	if again := lease(t, e, 1, time.Minute); len(again) != 1 {
		t.Fatalf("lease after giving back = %v", again)
	}
	counted := counterSeries(t, m, "hookverify_inbox_redeliveries_total")[""]
	help := metricHelp(t, m, "hookverify_inbox_redeliveries_total")
	if counted == 0 && !strings.Contains(help, "not_attempted") {
		t.Errorf("a delivery given back (not_attempted) and leased again is not counted, but the help says nothing of it: %q", help)
	}
}

// verifyOnceThrough sends one signed Stripe delivery to a server on a new database whose store
// is wrap of the real one, and returns the server's metrics and the call's error. The call's
// context is callCtx of the test's, made just before the call, so that a deadline or a
// cancellation it sets counts from the call and not from the setup.
func verifyOnceThrough(t *testing.T, callCtx func(context.Context) (context.Context, context.CancelFunc), wrap func(storage.Store) storage.Store) (*server.Metrics, error) {
	t.Helper()
	b := backends[0]
	dsn := b.newDatabase(t)
	st := openStore(t, b, dsn)
	e := newEnvOn(t, b, dsn, st)
	secret, _ := e.setup(t, stripeProvider, "shop")
	m := server.NewMetrics()
	e.options = func(o *server.Options) { o.Metrics = m }
	in := e.start(t, wrap(st))
	req := e.deliver(t, stripeProvider, "shop", eventID(stripeProvider), secret)
	ctx, cancel := callCtx(t.Context())
	defer cancel()
	_, err := in.verifier.Verify(ctx, req)
	return m, err
}
