package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/hookverify/hookverify/storage"
)

// Backup writes a consistent copy of the database file at dbPath to the new file outPath while
// other processes (a running serve) keep reading and writing it. Copying the file itself is not
// a backup: the latest commits, and pages of earlier ones, may still be in the write-ahead log
// only, and a copy taken during a checkpoint mixes two states. Backup runs SQLite's VACUUM INTO
// in one read transaction, so the copy holds every transaction committed before it began and
// none after, log included, and it takes no lock a writer waits for (the log grows meanwhile,
// as the running checkpoints cannot pass the snapshot).
//
// The copy is private (mode 0600: it holds sealed secrets and raw deliveries with their
// signatures), fsynced, and appears at outPath only once complete: an interrupted backup
// leaves no file there that could later be restored half-written. Backup refuses to replace an
// existing outPath (an error wrapping fs.ErrExist) and fails with storage.ErrNotFound when
// dbPath holds no store; it never creates, migrates or writes the database. The master key is
// not in the database and so not in the copy.
func Backup(ctx context.Context, dbPath, outPath string) error {
	if _, err := os.Lstat(outPath); err == nil {
		return fmt.Errorf("sqlite: backup to %s: %w: refusing to replace it", outPath, fs.ErrExist)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: backup to %s: %w", outPath, err)
	}
	if info, err := os.Stat(dbPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sqlite: backup %s: %w: no database there", dbPath, storage.ErrNotFound)
		}
		return fmt.Errorf("sqlite: backup %s: %w: %w", dbPath, storage.ErrUnavailable, err)
	} else if !info.Mode().IsRegular() {
		return fmt.Errorf("sqlite: backup %s: %w: not a database file", dbPath, storage.ErrInvalid)
	}

	// A read-only connection: the database cannot be written here, nor created if it was
	// removed since the check above (backupConn).
	db, err := sql.Open("sqlite", dsn(dbPath, DefaultBusyTimeout, backupConn))
	if err != nil {
		return fmt.Errorf("sqlite: backup %s: %w: %w", dbPath, storage.ErrUnavailable, err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// Refuse a file that is no store (an empty one, another program's database) rather than
	// hand back a "backup" that restores nothing.
	var migrations int64
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM schema_migrations").Scan(&migrations); err != nil {
		// No such table, or no SQLite file: no store there. Anything else (a lock held past the
		// busy timeout, a -shm file this user cannot open) is a failure to read one.
		if se, ok := errors.AsType[*sqlite.Error](err); ok && (se.Code()&0xff == sqlite3.SQLITE_ERROR || se.Code()&0xff == sqlite3.SQLITE_NOTADB) {
			return fmt.Errorf("sqlite: backup %s: %w: not a hookverify database: %w", dbPath, storage.ErrNotFound, err)
		}
		return fmt.Errorf("sqlite: backup %s: %w: %w", dbPath, storage.ErrUnavailable, err)
	} else if migrations == 0 {
		return fmt.Errorf("sqlite: backup %s: %w: not a hookverify database: no migrations applied", dbPath, storage.ErrNotFound)
	}

	// The copy is written beside outPath under a temporary name, then linked to outPath, which
	// fails rather than replace a file created there meanwhile. The temporary file is created
	// empty with mode 0600, which VACUUM INTO accepts as its target and keeps; SQLite would
	// otherwise create the file with the umask's mode.
	tmp, err := os.CreateTemp(filepath.Dir(outPath), unfinishedPrefix(outPath)+"*")
	if err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", outPath, err)
	}
	tmpPath := tmp.Name()
	defer os.Remove(tmpPath) // after the link, only the second name goes
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", outPath, err)
	}
	// The path is a bound parameter: no character of it is read as SQL.
	if _, err := db.ExecContext(ctx, "VACUUM INTO ?", tmpPath); err != nil {
		return fmt.Errorf("sqlite: backup %s: %w: %w", dbPath, storage.ErrUnavailable, err)
	}
	// VACUUM INTO does not fsync the copy; a backup reported done must be on disk.
	if err := syncPath(tmpPath); err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", outPath, err)
	}
	if err := placeBackup(tmpPath, outPath); err != nil {
		return fmt.Errorf("sqlite: backup to %s: %w", outPath, err)
	}
	if err := syncPath(filepath.Dir(outPath)); err != nil && runtime.GOOS != "windows" {
		// Windows cannot open a directory to sync it; its file system orders the new name.
		return fmt.Errorf("sqlite: backup to %s: %w", outPath, err)
	}
	return nil
}

// unfinishedPrefix begins the name of the copy Backup writes for outPath until it is complete.
func unfinishedPrefix(outPath string) string { return "." + filepath.Base(outPath) + ".partial-" }

// UnfinishedBackups lists the copies for outPath that backups left unfinished: those killed
// outright (SIGKILL, a crash, power lost), which had no chance to remove theirs, and those
// still running.
func UnfinishedBackups(outPath string) []string {
	dir := filepath.Dir(outPath)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // Backup itself reports a directory it cannot use
	}
	var found []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), unfinishedPrefix(outPath)) {
			found = append(found, filepath.Join(dir, e.Name()))
		}
	}
	return found
}

// linkFile is os.Link, a variable so that a test can be a file system without hard links.
var linkFile = os.Link

// placeBackup gives the finished copy at tmpPath the name outPath without replacing a file of
// that name: a hard link, which fails if one appeared meanwhile. A file system without hard
// links (FAT and exFAT drives, many FUSE mounts such as s3fs or gcsfuse, some SMB shares) gets
// a rename after a last check instead, after the whole copy was written: it would replace a
// file created in the instant between the two.
func placeBackup(tmpPath, outPath string) error {
	err := linkFile(tmpPath, outPath)
	if err == nil || errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, statErr := os.Lstat(outPath); !errors.Is(statErr, fs.ErrNotExist) {
		return err
	}
	return os.Rename(tmpPath, outPath)
}

// syncPath fsyncs a file or a directory (so that a new name in it is on disk).
func syncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}
