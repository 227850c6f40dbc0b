package cli

import (
	"strings"
	"testing"
)

// TestEdgeCountsConnectionsWithoutALimit: README lists hookverify_edge_connections_open among
// the edge's metrics as the connections open, and --max-connections 0 (a proxy in front caps
// them) is a documented setting; the gauge was only kept with a limit, so with 0 it read 0
// however many connections were open.
func TestEdgeCountsConnectionsWithoutALimit(t *testing.T) {
	_, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--verifier", addr,
		"--max-connections", "0", "--read-header-timeout", "1m")
	line := edge.log.logLine(t, "edge listening")
	metricsURL := "http://" + line["metrics_addr"].(string) + "/metrics"
	conns := dialIdle(t, line["addr"].(string), 3)
	waitForMetric(t, metricsURL, "hookverify_edge_connections_open 3")
	for _, c := range conns {
		c.Close()
	}
	waitForMetric(t, metricsURL, "hookverify_edge_connections_open 0")
	if !strings.Contains(get(t, metricsURL), "hookverify_edge_connection_limit_waits_total 0") {
		t.Errorf("a connection counted as waiting without a limit:\n%s", get(t, metricsURL))
	}
}
