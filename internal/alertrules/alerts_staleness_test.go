package alertrules

import (
	"slices"
	"testing"
)

// TestOldestAgeAlertSetsAsideStaleInstances: an instance whose inbox reads fail (its own
// connection hung until TCP gives up, a partition between it and the database) ages its
// oldest-pending gauges from its last read, while the other instances on the same database read
// fresh values. Aggregated with max alone, as the rule did, that one instance's growing age
// paged HookverifyInboxOldestPendingAge (critical: "workers are down, too few or stuck") for
// every endpoint that held a pending delivery at its last read, though workers drained them.
// The rule must tell fresh instances from stale ones, so it must read the stats timestamp; the
// aged values stay the answer only while no instance reads the inbox (storage down: nothing
// can be acked).
func TestOldestAgeAlertSetsAsideStaleInstances(t *testing.T) {
	root := moduleRoot(t)
	decls := declaredMetrics(t, root)
	var found bool
	for _, g := range loadRules(t, root).Groups {
		for _, r := range g.Rules {
			v, c := checkExpr(r.Expr, decls, labelValues())
			var bases []string
			for _, name := range v.metrics {
				if base, _, ok := c.baseMetric(name); ok {
					bases = append(bases, base)
				}
			}
			if !slices.Contains(bases, "hookverify_inbox_oldest_pending_age_seconds") {
				continue
			}
			found = true
			if !slices.Contains(bases, "hookverify_inbox_stats_last_success_timestamp_seconds") {
				t.Errorf("alert %q takes the max of every instance's oldest-pending age, aged ones of instances that cannot read the inbox included", r.Alert)
			}
		}
	}
	if !found {
		t.Fatal("no alert selects hookverify_inbox_oldest_pending_age_seconds")
	}
}
