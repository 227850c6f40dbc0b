package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// runBackup writes a consistent copy of the embedded store's database while serve keeps
// running on it (sqlite.Backup): a copy of the file itself may miss the latest commits, which
// are in the write-ahead log, or mix two states.
func runBackup(ctx context.Context, e env, args []string) error {
	flags := newFlags(e, "backup")
	// The data directory as serve and migrate take it, to find the same hookverify.db.
	dataDir := flags.String("data-dir", "./hookverify-data", "data directory of the embedded SQLite store to back up (serve's --data-dir)")
	out := flags.String("out", "", "file to write the backup to (mode 0600); must not exist")
	databaseURL := flags.String("database-url", "", "refused: back up PostgreSQL with pg_dump, CockroachDB with BACKUP")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	if *databaseURL != "" {
		return usagef("--database-url: back up PostgreSQL with its own tools (pg_dump, or a base backup with point-in-time recovery) and CockroachDB with its BACKUP statement; this command backs up the embedded store of --data-dir")
	}
	if *out == "" {
		return usagef("--out is required: the file to write the backup to")
	}
	dbPath := filepath.Join(*dataDir, "hookverify.db")
	// A backup killed outright (SIGKILL, a crash, power lost) leaves its unfinished copy beside
	// --out, a copy of the inbox's bodies and signatures like any backup. It is named, not
	// removed: one may be a backup to the same --out still running.
	leftovers := sqlite.UnfinishedBackups(*out)
	defer func() {
		for _, f := range leftovers {
			fmt.Fprintf(e.stderr, "warning: %s is the unfinished copy of a backup to %s that was killed, or is still running: remove it once none is\n", f, *out)
		}
	}()
	if err := sqlite.Backup(ctx, dbPath, *out); err != nil {
		switch {
		case errors.Is(err, fs.ErrExist):
			return fmt.Errorf("--out %s exists: refusing to replace it; give a new file", *out)
		case errors.Is(err, storage.ErrNotFound):
			return fmt.Errorf("--data-dir %s: no hookverify database to back up: %w", *dataDir, err)
		}
		return err
	}
	// The master key is not in the database, and must not travel with its backup: together
	// they open every stored secret.
	fmt.Fprintf(e.stdout, "backed up %s to %s; the master key is not in it: back it up separately, never with the database backup\n", dbPath, *out)
	return nil
}
