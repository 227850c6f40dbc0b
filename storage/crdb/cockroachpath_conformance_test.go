package crdb

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// TestConformanceCockroachPath runs the conformance suite on stores that take their
// CockroachDB code paths (see cockroachPathStore) on PostgreSQL: the conformance run of
// TestConformance takes the PostgreSQL paths only, and no CockroachDB server is available
// here. Only sequential work is safe on those paths on PostgreSQL (ExecuteTx hides a failed
// commit there, see TestExecuteTxHidesCommitFailureOnPostgreSQL), so the tests that race
// several callers are skipped. Every statement the run sends, migrations included, is then
// checked for PostgreSQL-only SQL, not only those TestCockroachDBStatementsAvoidEngineSpecificSQL
// lists by name.
func TestConformanceCockroachPath(t *testing.T) {
	t.Parallel()
	rec := &sqlRecorder{sql: map[string]bool{}}
	factory := func(t *testing.T) func(t *testing.T) storage.Store {
		if name := strings.ToLower(t.Name()); strings.Contains(name, "concurrent") || strings.Contains(name, "racing") {
			t.Skip("races several callers, which the CockroachDB paths cannot on PostgreSQL")
		}
		url := pgtest.Shared(t).NewDatabase(t)
		return func(t *testing.T) storage.Store {
			t.Helper()
			s := tracedCockroachPathStore(t, url, rec)
			s.SetLeaseConcurrency(DefaultLeaseConcurrency)
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			return s
		}
	}
	t.Run("conformance", func(t *testing.T) {
		storagetest.RunWith(t, factory, storagetest.Options{Skip: map[storagetest.Category]string{
			storagetest.Concurrency: "only sequential work is safe on the CockroachDB path on PostgreSQL",
		}})
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.sql) < 20 {
		t.Fatalf("only %d statements recorded", len(rec.sql))
	}
	sent := slices.Sorted(maps.Keys(rec.sql))
	for _, sql := range sent {
		if m := pgOnlySQL.FindString(sql); m != "" {
			t.Errorf("sent on the CockroachDB path with PostgreSQL-only %q:\n%s", m, sql)
		}
	}
}
