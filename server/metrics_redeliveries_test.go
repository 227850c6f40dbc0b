package server_test

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestRedeliveriesHelpOfAGiveBackOnALaterAttempt: hookverify_inbox_redeliveries_total counts a
// lease whose attempt is not the first. Its help said a delivery given back (not_attempted) is
// leased again on the same attempt "and not counted", true only of a first attempt: given back
// on its second, a delivery is leased again on its second and counted a second time (a worker
// stopping for a deploy raises it), and an operator reading the help took the rise for work
// done again.
func TestRedeliveriesHelpOfAGiveBackOnALaterAttempt(t *testing.T) {
	t.Parallel()
	m := server.NewMetrics()
	e := newEnvWith(t, backends[0], func(o *server.Options) { o.Metrics = m })
	acceptSome(t, e, "work", 1)
	first := lease(t, e, 1, time.Minute)[0]
	if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: first.GetInboxId(), LeaseToken: first.GetLeaseToken(),
		RetryAfter: durationpb.New(0), Error: "failed"}); err != nil {
		t.Fatal(err)
	}
	second := lease(t, e, 1, time.Minute)
	if len(second) != 1 || second[0].GetAttempts() != 2 {
		t.Fatalf("lease after a nack = %v; want the delivery on attempt 2", second)
	}
	before := counterSeries(t, m, "hookverify_inbox_redeliveries_total")[""]
	if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: second[0].GetInboxId(), LeaseToken: second[0].GetLeaseToken(),
		RetryAfter: durationpb.New(0), NotAttempted: true}); err != nil {
		t.Fatal(err)
	}
	again := lease(t, e, 1, time.Minute)
	if len(again) != 1 || again[0].GetAttempts() != 2 {
		t.Fatalf("lease after giving back = %v; want the delivery on attempt 2 again", again)
	}
	after := counterSeries(t, m, "hookverify_inbox_redeliveries_total")[""]
	help := metricHelp(t, m, "hookverify_inbox_redeliveries_total")
	if after > before && !strings.Contains(help, "counted again") {
		t.Errorf("a delivery given back on its second attempt and leased again is counted (%v to %v), but the help says otherwise: %q", before, after, help)
	}
}

// metricHelp is the help text m gives the metric name ("" when it has none).
func metricHelp(t *testing.T, m *server.Metrics, name string) string {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			return f.GetHelp()
		}
	}
	return ""
}
