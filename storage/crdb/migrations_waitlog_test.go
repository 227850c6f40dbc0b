package crdb

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/internal/syncbuf"
)

// waitForLog waits up to 10 s for logs to hold want.
func waitForLog(t *testing.T, logs *syncbuf.Buffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no log line saying %q; the log: %s", want, logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMigrationWaitsAreLogged: a migration held up by a long transaction on a table it alters,
// or by another instance's migration, holds up serve's start or migrate for as long; the
// operator must hear why, not watch a silent process.
func TestMigrationWaitsAreLogged(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.Shared(t).NewDatabase(t)
	logs := &syncbuf.Buffer{}
	s, err := Open(ctx, url, WithLogger(slog.New(slog.NewTextHandler(logs, nil))))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if logs.String() != "" {
		t.Errorf("a migration that waited for nothing logged %q", logs.String())
	}

	t.Run("a table in use", func(t *testing.T) {
		admin := connect(t, url)
		exec(t, admin, `DELETE FROM schema_migrations WHERE version = 7`)
		holder := connect(t, url)
		exec(t, holder, `BEGIN`)
		exec(t, holder, `SELECT count(*) FROM inbox`)
		migrated := make(chan error, 1)
		go func() { migrated <- s.Migrate(ctx) }()
		waitForLog(t, logs, "a table it alters is in use")
		exec(t, holder, `COMMIT`)
		if err := <-migrated; err != nil {
			t.Fatalf("Migrate: %v", err)
		}
		waitForLog(t, logs, "migration applied after waiting")
	})

	t.Run("another migration", func(t *testing.T) {
		holder := connect(t, url)
		exec(t, holder, `SELECT pg_advisory_lock($1)`, migrationLockKey)
		migrated := make(chan error, 1)
		go func() { migrated <- s.Migrate(ctx) }()
		waitForLog(t, logs, "waits for another process's migration")
		exec(t, holder, `SELECT pg_advisory_unlock($1)`, migrationLockKey)
		if err := <-migrated; err != nil {
			t.Fatalf("Migrate: %v", err)
		}
	})
}
