package crdb

import (
	"testing"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// newDatabase is the conformance suite's factory: a fresh database on the shared PostgreSQL
// cluster per test, and a function that opens a migrated store on it.
func newDatabase(t *testing.T) func(t *testing.T) storage.Store {
	url := pgtest.Shared(t).NewDatabase(t)
	return func(t *testing.T) storage.Store {
		t.Helper()
		return open(t, url)
	}
}

// open opens a store on url, closed when the test ends if the test does not close it.
func open(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	// Every test has its own database, and the factory may be called concurrently.
	storagetest.RunWith(t, newDatabase, storagetest.Options{Parallel: true})
}

// TestConformanceCommittingEachClaim runs the claim categories with group commit off
// (serve --commit-each-claim), where claims commit concurrently, one per transaction.
func TestConformanceCommittingEachClaim(t *testing.T) {
	t.Parallel()
	storagetest.RunWith(t, storagetest.CommittingEachClaim(newDatabase), storagetest.Options{Parallel: true,
		Skip: storagetest.ClaimPathOnly("only the claim path changes with group commit off")})
}

// BenchmarkClaims runs on the harness's PostgreSQL, which shares the machine with the benchmark.
func BenchmarkClaims(b *testing.B) { storagetest.BenchmarkClaims(b, openBenchStore(b)) }

// BenchmarkLeaseAck runs on the harness's PostgreSQL, like BenchmarkClaims.
func BenchmarkLeaseAck(b *testing.B) { storagetest.BenchmarkLeaseAck(b, openBenchStore(b)) }

func BenchmarkAcks(b *testing.B) { storagetest.BenchmarkAcks(b, openBenchStore(b)) }

func openBenchStore(b *testing.B) *Store {
	s, err := Open(b.Context(), pgtest.Shared(b).NewDatabase(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}
