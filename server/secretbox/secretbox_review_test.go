package secretbox

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestLoadOrCreateKeyFileSyncsItsDirectory proves that a generated key file survives a crash:
// fsyncing the file makes its content durable, but not its name, which lives in the
// directory. Without syncing the directory, a power loss after secrets were sealed under the
// new key could leave no key file, and the next start would generate another key that opens
// none of them.
func TestLoadOrCreateKeyFileSyncsItsDirectory(t *testing.T) {
	// Not parallel: it replaces syncDir.
	var synced []string
	orig := syncDir
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return orig(dir)
	}
	t.Cleanup(func() { syncDir = orig })
	dir := filepath.Join(t.TempDir(), "data")
	if _, created, err := LoadOrCreateKeyFile(filepath.Join(dir, "master.key")); err != nil || !created {
		t.Fatalf("LoadOrCreateKeyFile: created=%v, %v", created, err)
	}
	if !slices.Contains(synced, dir) {
		t.Fatalf("directories synced: %q, want %q among them", synced, dir)
	}
}
