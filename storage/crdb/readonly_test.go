package crdb

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestReadOnlyDatabaseFailsHealthReads: a PostgreSQL that reads but refuses writes (a standby,
// default_transaction_read_only set) failed every claim with 25006 while Ping and InboxStats,
// which /readyz and gRPC health follow, passed: health said SERVING while no delivery could be
// accepted. Both now answer ErrUnavailable, saying why. CockroachDB has the same session
// variables (default_transaction_read_only, settable for a role or a database, and
// transaction_read_only, shown as on/off; pkg/sql/vars.go) and refuses writes alike, yet its
// paths checked nothing; they run here on PostgreSQL, which answers the same statement alike.
func TestReadOnlyDatabaseFailsHealthReads(t *testing.T) {
	t.Parallel()
	for engine, openAs := range map[string]func(t *testing.T, url string) *Store{
		"postgresql":            open,
		"cockroachdb code path": cockroachPathStore,
	} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			url := pgtest.Shared(t).NewDatabase(t)
			open(t, url) // migrated while writable
			sep := "?"
			if strings.Contains(url, "?") {
				sep = "&"
			}
			readOnly := openAs(t, url+sep+"options=-c%20default_transaction_read_only%3Don")
			for name, read := range map[string]func() error{
				"Ping":       func() error { return readOnly.Ping(t.Context()) },
				"InboxStats": func() error { _, err := readOnly.InboxStats(t.Context()); return err },
			} {
				err := read()
				if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "read-only") {
					t.Errorf("%s on a read-only database = %v; want ErrUnavailable saying it is read-only", name, err)
				}
			}
			writable := openAs(t, url)
			if err := writable.Ping(t.Context()); err != nil {
				t.Errorf("Ping on a writable database: %v", err)
			}
			if _, err := writable.InboxStats(t.Context()); err != nil {
				t.Errorf("InboxStats on a writable database: %v", err)
			}
		})
	}
}
