package crdb

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

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

// TestOpenRefusesASchemaFromANewerRelease: a database that a later release has migrated (a
// version in schema_migrations this binary does not know) is refused at Open, with an error
// that says so, instead of being served by code that does not know what the newer steps
// changed (a rollback to an older binary, an old instance restarted mid-deploy). The error
// is ErrInvalid, which serve takes for a configuration no retry mends.
func TestOpenRefusesASchemaFromANewerRelease(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, url)
	newer := migrations[len(migrations)-1].version + 1
	exec(t, conn, "INSERT INTO schema_migrations (version, description) VALUES ($1, 'from a later release')", newer)

	_, err := Open(t.Context(), url)
	if err == nil {
		t.Fatal("Open on a schema migrated by a newer release succeeded")
	}
	if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprint(newer)) {
		t.Fatalf("Open on a newer schema: %v, want ErrInvalid naming version %d", err, newer)
	}
	// The CockroachDB path refuses too.
	if err := cockroachPathStore(t, url).Migrate(t.Context()); !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("Migrate step by step on a newer schema: %v, want ErrInvalid", err)
	}
}

// TestOpenWithoutCreatePrivilegeOnAMigratedDatabase: serve may run as a role that only reads
// and writes rows once `hookverify migrate` has run as the schema's owner. Open must then
// find nothing to do, rather than fail on DDL it does not need.
func TestOpenWithoutCreatePrivilegeOnAMigratedDatabase(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	open(t, url).Close()
	conn := connect(t, url)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	role := "hv_app_" + strings.TrimPrefix(u.Path, "/")
	exec(t, conn, fmt.Sprintf("CREATE ROLE %s LOGIN PASSWORD 'app'", role))
	t.Cleanup(func() {
		// Before the database goes: a role outlives it, and owns privileges in it.
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			t.Errorf("drop role %s: %v", role, err)
			return
		}
		defer c.Close(context.Background())
		for _, sql := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			if _, err := c.Exec(context.Background(), sql); err != nil {
				t.Errorf("%s: %v", sql, err)
			}
		}
	})
	exec(t, conn, "REVOKE CREATE ON SCHEMA public FROM PUBLIC")
	exec(t, conn, fmt.Sprintf("GRANT USAGE ON SCHEMA public TO %s", role))
	exec(t, conn, fmt.Sprintf("GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO %s", role))
	u.User = neturl.UserPassword(role, "app")
	s, err := Open(t.Context(), u.String())
	if err != nil {
		t.Fatalf("Open as a role without CREATE on a migrated database: %v", err)
	}
	s.Close()
}
