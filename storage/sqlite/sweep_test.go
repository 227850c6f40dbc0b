package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSweepStatementsReadARange: each statement of Sweep finds its batch along an index range
// bounded by its time, so that a sweep costs what it deletes, not what the store keeps. The
// acked records are kept for days (--inbox-retention), millions of them; bounded by acked_at
// alone, which no index holds, the sweep read every one of them at every sweep, holding the
// write lock.
func TestSweepStatementsReadARange(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "sweep.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	before := time.Date(2025, time.March, 14, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		what, sql, want string
		args            []any
	}{
		{"the acked records' batch", sweepAckedSQL, "inbox_state_visible_at (state=? AND visible_at<?)", []any{micros(before), 500}},
		{"the claims' batch", sweepClaimsSQL, "claims_first_received_at (first_received_at>? AND first_received_at<?)",
			[]any{micros(before), micros(before.Add(-time.Minute)), 500}},
	} {
		rows, err := s.reader.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+c.sql, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(plan, "\n"); !strings.Contains(got, c.want) {
			t.Errorf("%s does not read a range of its index (want %q):\n%s", c.what, c.want, got)
		}
	}
}
