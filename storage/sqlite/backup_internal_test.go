package sqlite

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestBackupWithoutHardLinks: on a file system without hard links (FAT, exFAT, many FUSE
// mounts) the last step, linking the finished copy to --out, failed after the whole copy was
// written. The copy is renamed into place instead, and an --out created meanwhile is still
// never replaced.
func TestBackupWithoutHardLinks(t *testing.T) {
	dir := storeWithoutHardLinks(t)
	out := filepath.Join(dir, "backup.db")
	if err := Backup(t.Context(), filepath.Join(dir, "hookverify.db"), out); err != nil {
		t.Fatalf("Backup without hard links: %v", err)
	}
	if info, err := os.Stat(out); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v, %v; want mode 0600", info, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dir, ".backup.db.partial-*")); len(leftovers) != 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}

// storeWithoutHardLinks makes the package's links fail as on a file system without hard
// links, for the test's duration, and returns a folder holding a closed, migrated store
// hookverify.db. Its tests cannot run in parallel: linkFile is the package's.
func storeWithoutHardLinks(t *testing.T) string {
	t.Helper()
	link := linkFile
	t.Cleanup(func() { linkFile = link })
	linkFile = func(string, string) error { return &os.LinkError{Op: "link", Err: syscall.EPERM} }
	dir := t.TempDir()
	s, err := Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	return dir
}
