package crdb

import (
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
// several callers are skipped.
func TestConformanceCockroachPath(t *testing.T) {
	t.Parallel()
	factory := func(t *testing.T) func(t *testing.T) storage.Store {
		if name := strings.ToLower(t.Name()); strings.Contains(name, "concurrent") || strings.Contains(name, "racing") {
			t.Skip("races several callers, which the CockroachDB paths cannot on PostgreSQL")
		}
		url := pgtest.Shared(t).NewDatabase(t)
		return func(t *testing.T) storage.Store {
			t.Helper()
			s := cockroachPathStore(t, url)
			s.SetLeaseConcurrency(DefaultLeaseConcurrency)
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			return s
		}
	}
	storagetest.RunWith(t, factory, storagetest.Options{Skip: map[storagetest.Category]string{
		storagetest.Concurrency: "only sequential work is safe on the CockroachDB path on PostgreSQL",
	}})
}
