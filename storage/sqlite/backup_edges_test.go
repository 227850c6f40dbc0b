package sqlite

import (
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// TestBackupOfADirectoryIsInvalid: a database path naming a directory is refused as invalid
// (no retry mends it), and nothing is written at the target.
func TestBackupOfADirectoryIsInvalid(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	outDir := t.TempDir()
	err := Backup(t.Context(), dir, filepath.Join(outDir, "backup.db"))
	if !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("backup of a directory: %v, want ErrInvalid", err)
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
		t.Errorf("a refused backup left %d files", len(entries))
	}
}

// TestBackupWithoutHardLinksRefusesAnExistingFile: on a file system without hard links an
// existing target is refused as existing (fs.ErrExist), as with them, and is left as it was.
func TestBackupWithoutHardLinksRefusesAnExistingFile(t *testing.T) {
	dir := storeWithoutHardLinks(t)
	out := filepath.Join(dir, "backup.db")
	if err := os.WriteFile(out, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Backup(t.Context(), filepath.Join(dir, "hookverify.db"), out); !errors.Is(err, fs.ErrExist) {
		t.Errorf("backup over an existing file without hard links: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(out); string(b) != "keep" {
		t.Errorf("existing file changed to %q", b)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".backup.db.partial-*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// TestBackupOfAStoreNeverMigratedIsNotFound: a file whose migration table is there but empty
// (a first start stopped before its first step) holds no store: Backup refuses it as not
// found rather than hand back a copy that restores nothing.
func TestBackupOfAStoreNeverMigratedIsNotFound(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hookverify.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if err := CreateSchemaAt(t.Context(), db, 0); err != nil {
		t.Fatal(err)
	}
	db.Close()
	outDir := t.TempDir()
	if err := Backup(t.Context(), path, filepath.Join(outDir, "backup.db")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("backup of a file with no migration applied: %v, want ErrNotFound", err)
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
		t.Errorf("a refused backup left %d files", len(entries))
	}
}

// TestUnfinishedBackupsNameOnlyTheTargetsCopies: the unfinished copies listed for a target are
// those a backup to that target leaves, not another target's, nor other hidden files.
func TestUnfinishedBackupsNameOnlyTheTargetsCopies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := filepath.Join(dir, "nightly.db")
	own := filepath.Join(dir, unfinishedPrefix(out)+"123")
	for _, name := range []string{own, filepath.Join(dir, unfinishedPrefix(filepath.Join(dir, "weekly.db"))+"456"),
		filepath.Join(dir, ".hidden"), filepath.Join(dir, "nightly.db.partial-789")} {
		if err := os.WriteFile(name, []byte("half a database"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if got := UnfinishedBackups(out); !slices.Equal(got, []string{own}) {
		t.Errorf("UnfinishedBackups(%s) = %q, want only %s", out, got, own)
	}
}
