package alertrules

import (
	"slices"
	"testing"
)

// TestAlertsSelectTheirCompanions: an alert on some metrics is only right when it also reads
// another, which says what the first one's value means:
//   - At --max-connections the edge takes the slot of a keep-alive connection idle for over a
//     second without waiting, so an edge held at its bound by idle connections (clients' pools
//     past the bound, or anyone reconnecting to hold it) shows in
//     hookverify_edge_idle_connections_closed_total and not, or only now and then, in the wait
//     time: the alert on the edge's bounds must select both.
//   - An instance whose inbox reads fail (its own connection hung until TCP gives up, a
//     partition between it and the database) ages its oldest-pending gauges from its last read,
//     while the other instances on the same database read fresh values. Aggregated with max
//     alone, that one instance's growing age paged HookverifyInboxOldestPendingAge (critical:
//     "workers are down, too few or stuck") for every endpoint that held a pending delivery at
//     its last read, though workers drained them. The rule must tell fresh instances from stale
//     ones, so it must read the stats timestamp; the aged values stay the answer only while no
//     instance reads the inbox (storage down: nothing can be acked).
func TestAlertsSelectTheirCompanions(t *testing.T) {
	root := moduleRoot(t)
	decls := declaredMetrics(t, root)
	rules := loadRules(t, root)
	for _, c := range []struct{ metric, companion string }{
		{"hookverify_edge_connection_limit_wait_seconds_total", "hookverify_edge_idle_connections_closed_total"},
		{"hookverify_inbox_oldest_pending_age_seconds", "hookverify_inbox_stats_last_success_timestamp_seconds"},
		// A stale instance's old count kept the dead-letters alert firing after they were
		// discarded (TestInboxAlertsPromtool shows the rule's behaviour).
		{"hookverify_inbox_dead", "hookverify_inbox_stats_last_success_timestamp_seconds"},
	} {
		found := false
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				v, checked := checkExpr(r.Expr, decls, labelValues())
				var bases []string
				for _, name := range v.metrics {
					if base, _, ok := checked.baseMetric(name); ok {
						bases = append(bases, base)
					}
				}
				if !slices.Contains(bases, c.metric) {
					continue
				}
				found = true
				if !slices.Contains(bases, c.companion) {
					t.Errorf("alert %q selects %s but not %s", r.Alert, c.metric, c.companion)
				}
			}
		}
		if !found {
			t.Errorf("no alert selects %s", c.metric)
		}
	}
}
