package cli

import (
	"testing"
	"time"
)

// TestConnectionLimitTimesAWaitOnceCounted: a scrape that reads a wait in
// hookverify_edge_connection_limit_waits_total must find it timed in
// hookverify_edge_connection_limit_wait_seconds_total too. The count rose (and the log line
// was written) before the clock started, so a scrape in between read a wait of no time at
// all: TestEdgeBoundsItsConnections, which reads the one just after the other, failed then.
func TestConnectionLimitTimesAWaitOnceCounted(t *testing.T) {
	timed := make(chan bool, 1)
	var m *connectionMetrics
	l, m, addr := newTestLimit(t, 1, func() {
		time.Sleep(2 * time.Millisecond)
		timed <- m.waiting.seconds() > 0
	})
	fillAndWait(t, l, addr) // the second waits until the test's cleanup closes l
	select {
	case ok := <-timed:
		if !ok {
			t.Error("the wait was counted (and logged) while its time was not yet being counted")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second connection did not wait")
	}
}
