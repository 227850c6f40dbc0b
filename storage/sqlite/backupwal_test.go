package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestBackupOfAKilledStoresFiles: a store killed leaves its log, which holds the latest
// commits; a backup of those files (with or without the -shm) holds them.
func TestBackupOfAKilledStoresFiles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s := openAt(t, path)
	createStripeEndpoint(t, s, "ep-1")
	for i := range 3 {
		if r, err := s.Claim(t.Context(), deliveryOfSize(i, 100)); err != nil || !r.Accepted {
			t.Fatal(r, err)
		}
	}
	for _, withShm := range []bool{true, false} {
		dir := t.TempDir()
		suffixes := []string{"", "-wal"}
		if withShm {
			suffixes = append(suffixes, "-shm")
		}
		for _, suffix := range suffixes {
			b, err := os.ReadFile(path + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "hookverify.db"+suffix), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out := filepath.Join(t.TempDir(), "backup.db")
		if err := Backup(t.Context(), filepath.Join(dir, "hookverify.db"), out); err != nil {
			t.Fatalf("shm %v: Backup: %v", withShm, err)
		}
		b := openAt(t, out)
		if n, err := b.CountDeliveries(t.Context(), ""); err != nil || n != 3 {
			t.Fatalf("shm %v: backup holds %d deliveries, %v; want 3", withShm, n, err)
		}
		if _, err := os.Stat(out + "-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
}
