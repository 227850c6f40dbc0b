package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackupThatCannotWriteExitsNonZero: a backup whose --out cannot be written (its directory
// does not exist) fails: a non-zero exit, no "backed up" on stdout, and no file at --out.
func TestBackupThatCannotWriteExitsNonZero(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if code, out, errOut := run(t, "", "migrate", "--data-dir", dataDir); code != 0 {
		t.Fatalf("migrate: exit %d %q %q", code, out, errOut)
	}
	out := filepath.Join(dir, "no-such-dir", "nightly.db")
	code, stdout, errOut := run(t, "", "backup", "--data-dir", dataDir, "--out", out)
	if code == 0 || stdout != "" || errOut == "" {
		t.Errorf("backup to %s: exit %d, stdout %q, stderr %q; want a non-zero exit, an error and no output", out, code, stdout, errOut)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a failed backup left %s", out)
	}
}

// TestBackupDefaultDataDirIsServes: without --data-dir, backup finds the database that serve
// and migrate keep under their default data directory.
func TestBackupDefaultDataDirIsServes(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if code, out, errOut := run(t, "", "migrate"); code != 0 {
		t.Fatalf("migrate with the default --data-dir: exit %d %q %q", code, out, errOut)
	}
	code, stdout, errOut := run(t, "", "backup", "--out", "nightly.db")
	if code != 0 || !strings.Contains(stdout, "backed up") {
		t.Fatalf("backup with the default --data-dir: exit %d %q %q", code, stdout, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "nightly.db")); err != nil {
		t.Error(err)
	}
}

// TestBackupNamesEveryUnfinishedCopy: when several killed backups to one --out left their
// copies, every one is named on stderr, not only the first.
func TestBackupNamesEveryUnfinishedCopy(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if code, out, errOut := run(t, "", "migrate", "--data-dir", dataDir); code != 0 {
		t.Fatalf("migrate: exit %d %q %q", code, out, errOut)
	}
	out := filepath.Join(dir, "nightly.db")
	left := []string{filepath.Join(dir, ".nightly.db.partial-1234"), filepath.Join(dir, ".nightly.db.partial-5678")}
	for _, f := range left {
		if err := os.WriteFile(f, []byte("half a database"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, errOut := run(t, "", "backup", "--data-dir", dataDir, "--out", out)
	if code != 0 || !strings.Contains(stdout, "backed up") {
		t.Fatalf("backup: exit %d %q %q", code, stdout, errOut)
	}
	for _, f := range left {
		if !strings.Contains(errOut, f) {
			t.Errorf("stderr %q does not name the unfinished copy %s", errOut, f)
		}
	}
}
