package server

import (
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// TestAlertedCountersStartAtZero: the alerts on hookverify_backpressure_total and on
// UNAVAILABLE answers use rate(), which needs a sample before the rise. A series created by its
// first increment starts at 1, and a lone refusal (one store hiccup, one burst over a limit)
// never shows in rate() at all. Both are exported at 0 before: UNAVAILABLE for every method at
// start, backpressure for every endpoint the inbox read has seen.
func TestAlertedCountersStartAtZero(t *testing.T) {
	m := NewMetrics()
	unavailable := counterSeries(t, m, "hookverify_grpc_requests_total", "code", codes.Unavailable.String())
	if len(unavailable) != len(methodRules) {
		t.Errorf("%d UNAVAILABLE series at start, want one per method (%d)", len(unavailable), len(methodRules))
	}
	if v, ok := unavailable[hookverifyv1.VerifierService_Verify_FullMethodName]; !ok || v != 0 {
		t.Errorf("Verify UNAVAILABLE at start = %g (exported: %v), want 0", v, ok)
	}
	if got := counterSeries(t, m, "hookverify_backpressure_total", "", ""); len(got) != 0 {
		t.Fatalf("backpressure series before any inbox read: %v, want none", got)
	}
	m.setInboxStats([]storage.EndpointInboxStats{{EndpointID: "ep_a", Pending: 3}}, time.Now())
	if got := counterSeries(t, m, "hookverify_backpressure_total", "", ""); len(got) != 1 || got["ep_a"] != 0 {
		t.Fatalf("backpressure series after a read seeing ep_a: %v, want ep_a at 0", got)
	}
	m.setInboxStats(nil, time.Now())
	if got := counterSeries(t, m, "hookverify_backpressure_total", "", ""); len(got) != 1 {
		t.Errorf("backpressure series after ep_a's inbox emptied: %v; a counter must stay", got)
	}
}

// counterSeries gathers the counter family name and returns its values by the label that is
// not label (the method or the endpoint), keeping only series whose label equals value when
// label is set.
func counterSeries(t *testing.T, m *Metrics, name, label, value string) map[string]float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, series := range f.GetMetric() {
			key, keep := "", label == ""
			for _, l := range series.GetLabel() {
				if l.GetName() == label {
					keep = l.GetValue() == value
				} else {
					key = l.GetValue()
				}
			}
			if keep {
				got[key] = series.GetCounter().GetValue()
			}
		}
	}
	return got
}
