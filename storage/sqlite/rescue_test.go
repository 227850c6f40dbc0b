package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestLogRescueWaitsOutAnOldSnapshot: the checkpoint that copies a deleted log into the
// database file cannot pass a reader that holds an older snapshot (a backup running in another
// process, whose VACUUM INTO is one long read). SQLite then copies only what precedes that
// snapshot and says so in its answer, not as an error: the rescue must be tried again, at the
// next look, rather than be taken as done, or a kill loses the commits after the snapshot.
func TestLogRescueWaitsOutAnOldSnapshot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s, err := OpenWith(ctx, path, Options{BusyTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")
	if r, err := s.Claim(ctx, deliveryOfSize(0, 100)); err != nil || !r.Accepted {
		t.Fatal(r, err)
	}
	// Another process reads in one long transaction, from a snapshot taken now.
	other, err := sql.Open("sqlite", dsn(path, time.Second, readerConn))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	backup, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer backup.Rollback()
	var n int
	if err := backup.QueryRowContext(ctx, "SELECT count(*) FROM inbox").Scan(&n); err != nil {
		t.Fatal(err)
	}
	// Accepted after the snapshot: in the log only, past the reader's mark.
	for i := 1; i <= 3; i++ {
		if r, err := s.Claim(ctx, deliveryOfSize(i, 100)); err != nil || !r.Accepted {
			t.Fatal(r, err)
		}
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Ping after the log was deleted = %v, want ErrUnavailable", err)
	}
	// The backup ends; the next look rescues what the first could not.
	if err := backup.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Ping after the log was deleted = %v, want ErrUnavailable", err)
	}
	crashed := copyAsOnDisk(t, path)
	for i := 0; i <= 3; i++ {
		if _, err := crashed.LookupClaim(ctx, "ep-1", fmt.Sprint("evt-", i)); err != nil {
			t.Errorf("after a kill: claim of evt-%d, accepted before the log was deleted: %v", i, err)
		}
	}
}
