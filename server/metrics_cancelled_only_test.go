package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// hangingListStore is a store whose endpoint listing does not answer until the caller gives up.
type hangingListStore struct{ storage.Store }

func (s hangingListStore) ListEndpointsPage(ctx context.Context, _ string, _ int) ([]storage.Endpoint, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestVerifyLatencyLeavesOtherCallsOut: the interceptor times the Verify calls their caller
// gave up on into hookverify_verify_duration_seconds (TestVerifyLatencyCountsCallsTheCallerGaveUpOn);
// another method's call given up on (an admin listing, a worker's lease) is no Verify, and
// counted there it would raise the latency the HookverifyLatency alert reads for providers.
func TestVerifyLatencyLeavesOtherCallsOut(t *testing.T) {
	t.Parallel()
	b := backends[0]
	dsn := b.newDatabase(t)
	st := openStore(t, b, dsn)
	e := newEnvOn(t, b, dsn, st)
	m := server.NewMetrics()
	e.options = func(o *server.Options) { o.Metrics = m }
	in := e.start(t, hangingListStore{st})

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := in.admin.ListEndpoints(ctx, &hookverifyv1.ListEndpointsRequest{})
	wantCode(t, err, codes.DeadlineExceeded)
	// Until the server's handler has ended and the interceptor counted the call.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if methodLatencyCount(t, m, hookverifyv1.AdminService_ListEndpoints_FullMethodName) > 0 {
			break
		}
	}
	if n, _ := histogramCount(t, m, "hookverify_verify_duration_seconds"); n != 0 {
		t.Errorf("hookverify_verify_duration_seconds has %d samples after an admin call given up on and no Verify; want 0", n)
	}
}

// methodLatencyCount returns how many calls of method hookverify_grpc_request_duration_seconds
// has timed.
func methodLatencyCount(t *testing.T, m *server.Metrics, method string) uint64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "hookverify_grpc_request_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "method" && l.GetValue() == method {
					return s.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// failingClaimStore is a store whose claims fail at once (a database that is down).
type failingClaimStore struct{ storage.Store }

func (s failingClaimStore) Claim(context.Context, storage.Delivery) (storage.ClaimResult, error) {
	return storage.ClaimResult{}, storage.ErrUnavailable
}

// TestVerifyLatencyLeavesFailedCallsOut: hookverify_verify_duration_seconds times answered
// Verify calls and those their caller gave up on (its help); a call the server failed itself
// (UNAVAILABLE: the store down) is neither, and its quick failures would lower the p99 that
// HookverifyLatency alerts on while every delivery failed.
func TestVerifyLatencyLeavesFailedCallsOut(t *testing.T) {
	t.Parallel()
	m, err := verifyOnceThrough(t, context.WithCancel, func(st storage.Store) storage.Store { return failingClaimStore{st} })
	wantCode(t, err, codes.Unavailable)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if methodLatencyCount(t, m, hookverifyv1.VerifierService_Verify_FullMethodName) > 0 {
			break
		}
	}
	if n, _ := histogramCount(t, m, "hookverify_verify_duration_seconds"); n != 0 {
		t.Errorf("hookverify_verify_duration_seconds has %d samples after one Verify failed UNAVAILABLE; want 0", n)
	}
}
