package sqlite_test

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestBackupWhileWriting: a backup taken while claims commit holds every claim committed
// before it began, with its delivery, opens as a store that passes integrity_check, is
// private, and leaves nothing else behind.
func TestBackupWhileWriting(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	s, err := sqlite.Open(ctx, filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if err := s.CreateEndpoint(ctx, storage.Endpoint{ID: "ep", Provider: "stripe", DedupeScope: "ep",
		TimestampTolerance: 5 * time.Minute, MaxBodyBytes: 1 << 20, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	claim := func(id string) error {
		r, err := s.Claim(ctx, storage.Delivery{InboxID: "in-" + id, Scope: "ep", EventID: id, EndpointID: "ep",
			OperationKey: "op-" + id, Method: "POST", URL: "https://h.example/ep", Body: []byte(`{"id":"` + id + `"}`), ReceivedAt: now})
		if err == nil && !r.Accepted {
			err = fmt.Errorf("claim %s not accepted", id)
		}
		return err
	}

	// Writers keep claiming new events before, during and after the backup.
	var committed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	var before [4][]string
	var mu sync.Mutex
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				if err := claim(id); err != nil {
					errs <- err
					return
				}
				mu.Lock()
				before[w] = append(before[w], id)
				mu.Unlock()
				committed.Add(1)
			}
		})
	}
	for committed.Load() < 200 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	var want []string
	for _, ids := range before {
		want = append(want, ids...)
	}
	mu.Unlock()
	out := filepath.Join(t.TempDir(), "backup.db")
	err = sqlite.Backup(ctx, filepath.Join(dir, "hookverify.db"), out)
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}

	info, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("backup mode %v, want 0600", mode)
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 1 {
		t.Errorf("backup dir holds %d entries, want only the backup", len(entries))
	}

	db, err := sql.Open("sqlite", out)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of the backup: %q %v", check, err)
	}
	for _, id := range want {
		var body string
		if err := db.QueryRowContext(ctx, "SELECT body FROM inbox WHERE id = ?", "in-"+id).Scan(&body); err != nil || !strings.Contains(body, id) {
			t.Fatalf("delivery %s committed before the backup: %q %v", id, body, err)
		}
	}
	db.Close()

	restored, err := sqlite.Open(ctx, out)
	if err != nil {
		t.Fatalf("open the backup as a store: %v", err)
	}
	defer restored.Close()
	for _, id := range want {
		r, err := restored.LookupClaim(ctx, "ep", id)
		if err != nil || r.OperationKey != "op-"+id {
			t.Fatalf("claim %s committed before the backup: %+v %v", id, r, err)
		}
	}
	t.Logf("%d claims committed before the backup began", len(want))
}

// TestBackupRefusals: an existing target is never replaced, and a path with no store is
// refused without creating a database there.
func TestBackupRefusals(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	_, dbPath := openTemp(t)
	existing := filepath.Join(t.TempDir(), "existing.db")
	if err := os.WriteFile(existing, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.Backup(ctx, dbPath, existing); !errors.Is(err, fs.ErrExist) {
		t.Errorf("backup over an existing file: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep" {
		t.Errorf("existing file changed to %q", b)
	}

	missing := filepath.Join(t.TempDir(), "hookverify.db")
	if err := sqlite.Backup(ctx, missing, filepath.Join(t.TempDir(), "b.db")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("backup of a missing database: %v, want ErrNotFound", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("backup created the missing database: %v", err)
	}

	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	outDir := t.TempDir()
	if err := sqlite.Backup(ctx, empty, filepath.Join(outDir, "b.db")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("backup of an empty file: %v, want ErrNotFound", err)
	}
	junk := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := sqlite.Backup(ctx, junk, filepath.Join(outDir, "b.db")); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("backup of a file that is no database: %v, want ErrNotFound", err)
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 0 {
		t.Errorf("a refused backup left %d files", len(entries))
	}

	// A path SQL would misread stays a path.
	quoted := filepath.Join(t.TempDir(), "it's a \"backup\"; DROP TABLE claims.db")
	if err := sqlite.Backup(ctx, dbPath, quoted); err != nil {
		t.Fatalf("backup to %q: %v", quoted, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(quoted)); len(entries) != 1 || !strings.HasPrefix(entries[0].Name(), "it's") {
		t.Errorf("backup dir holds %v", entries)
	}
}
