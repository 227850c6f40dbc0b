package alertrules

import (
	"slices"
	"testing"
)

// TestEdgeConnectionBoundAlertSeesIdleCloses: at --max-connections the edge takes the slot of a
// keep-alive connection idle for over a second without waiting, so an edge held at its bound
// by idle connections (clients' pools past the bound, or anyone reconnecting to hold it) shows
// in hookverify_edge_idle_connections_closed_total and not, or only now and then, in the wait
// time: the alert on the edge's bounds must select both.
func TestEdgeConnectionBoundAlertSeesIdleCloses(t *testing.T) {
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
			if !slices.Contains(bases, "hookverify_edge_connection_limit_wait_seconds_total") {
				continue
			}
			found = true
			if !slices.Contains(bases, "hookverify_edge_idle_connections_closed_total") {
				t.Errorf("alert %q selects the edge's wait at --max-connections but not its idle connections closed there", r.Alert)
			}
		}
	}
	if !found {
		t.Fatal("no alert selects hookverify_edge_connection_limit_wait_seconds_total")
	}
}
