package server

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// TestVerifyPastItsDeadlineIsTimed: a Verify the server ends DEADLINE_EXCEEDED (the edge's
// deadline passed) is one of the slowest calls and is timed in
// hookverify_verify_duration_seconds, like a cancelled one; an admin call past its deadline is
// not.
func TestVerifyPastItsDeadlineIsTimed(t *testing.T) {
	m := NewMetrics()
	deadline := func(context.Context, any) (any, error) {
		return nil, status.Error(codes.DeadlineExceeded, "verify: deadline exceeded")
	}
	verify := &grpc.UnaryServerInfo{FullMethod: hookverifyv1.VerifierService_Verify_FullMethodName}
	if _, err := m.interceptor(context.Background(), nil, verify, deadline); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("interceptor answered %v, want the handler's DEADLINE_EXCEEDED", err)
	}
	if n := verifyLatencySamples(t, m); n != 1 {
		t.Errorf("hookverify_verify_duration_seconds has %d samples after one Verify ended DEADLINE_EXCEEDED, want 1", n)
	}
	for method := range methodRules {
		if method == verify.FullMethod {
			continue
		}
		if _, err := m.interceptor(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method}, deadline); err == nil {
			t.Fatal("interceptor dropped the handler's error")
		}
	}
	if n := verifyLatencySamples(t, m); n != 1 {
		t.Errorf("hookverify_verify_duration_seconds has %d samples after other methods ended DEADLINE_EXCEEDED, want still 1", n)
	}
}

func verifyLatencySamples(t *testing.T, m *Metrics) uint64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "hookverify_verify_duration_seconds" {
			return f.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return 0
}

// TestAgingDoesNotRevivePrunedInboxGauges: aging the oldest-pending gauges from an older read
// (a hung read being watched while a newer read lands) must not bring back the gauge of an
// endpoint the newer read no longer has: its inbox drained, and a revived age would grow
// forever and page on an empty inbox.
func TestAgingDoesNotRevivePrunedInboxGauges(t *testing.T) {
	m := NewMetrics()
	now := time.Now()
	older := []storage.EndpointInboxStats{
		{EndpointID: "ep_a", Pending: 1, OldestPendingAt: now.Add(-time.Minute)},
		{EndpointID: "ep_b", Pending: 1, OldestPendingAt: now.Add(-time.Minute)},
	}
	m.setInboxStats(older, now)
	m.setInboxStats(older[:1], now.Add(time.Second))
	m.ageInbox(older, now.Add(2*time.Second))
	got := counterSeries(t, m, "hookverify_inbox_oldest_pending_age_seconds", "", "")
	if _, ok := got["ep_b"]; ok || len(got) != 1 {
		t.Errorf("oldest-pending gauges after ep_b drained and an older read was aged: %v, want ep_a only", got)
	}
}
