package crdb

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestReadOnlyCockroachDBFailsHealthReads: CockroachDB has the same session variables as
// PostgreSQL (default_transaction_read_only, settable for a role or a database, and
// transaction_read_only, both shown as on/off; pkg/sql/vars.go), and refuses writes in a
// read-only transaction with 25006. Ping and InboxStats checked them on PostgreSQL only, so on
// such a CockroachDB every claim failed while health said SERVING. The CockroachDB paths run
// here on PostgreSQL, which answers the same statement alike.
func TestReadOnlyCockroachDBFailsHealthReads(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	open(t, url) // migrated while writable
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	readOnly := cockroachPathStore(t, url+sep+"options=-c%20default_transaction_read_only%3Don")

	for name, read := range map[string]func() error{
		"Ping":       func() error { return readOnly.Ping(t.Context()) },
		"InboxStats": func() error { _, err := readOnly.InboxStats(t.Context()); return err },
	} {
		err := read()
		if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s on a read-only CockroachDB = %v; want ErrUnavailable saying it is read-only", name, err)
		}
	}
	writable := cockroachPathStore(t, url)
	if err := writable.Ping(t.Context()); err != nil {
		t.Errorf("Ping on a writable CockroachDB: %v", err)
	}
	if _, err := writable.InboxStats(t.Context()); err != nil {
		t.Errorf("InboxStats on a writable CockroachDB: %v", err)
	}
}
