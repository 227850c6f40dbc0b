package server_test

import (
	"strings"
	"testing"

	"github.com/hookverify/hookverify/server"
)

// TestLatencyHistogramsReachProviderTimeouts: the latency histograms ended at 4.096 s, so a
// p99 above that read as 4.096 s, and an alert on latency nearing a provider's timeout (GitHub
// waits 10 s, Stripe and Shopify about as long) could not be written. Every latency histogram
// must have buckets past 10 s.
func TestLatencyHistogramsReachProviderTimeouts(t *testing.T) {
	m := server.NewMetrics()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "hookverify_") || !strings.HasSuffix(f.GetName(), "_seconds") || f.GetType().String() != "HISTOGRAM" {
			continue
		}
		for _, metric := range f.GetMetric() {
			buckets := metric.GetHistogram().GetBucket()
			if top := buckets[len(buckets)-1].GetUpperBound(); top < 10 {
				t.Errorf("%s: the last bucket ends at %g s, below a provider's 10 s timeout", f.GetName(), top)
			}
			seen++
		}
	}
	if seen < 3 {
		t.Fatalf("found %d latency histograms with series; want the Verify, claim and batch ones at least", seen)
	}
}
