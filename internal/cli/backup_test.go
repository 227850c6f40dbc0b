package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// backupServer serves cfg's store as `serve` would and returns its address.
func backupServer(t *testing.T, cfg *storeConfig) (addr string, stop func()) {
	t.Helper()
	keyring, err := cfg.keyring(newTestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServerWith(ctx, newTestLogger(t), serveConfig{listen: "127.0.0.1:0", cacheTTL: server.DefaultCacheTTL,
		claimCacheSize: server.DefaultClaimCacheSize, claimCacheTTL: server.DefaultClaimCacheTTL}, keyring, cfg.openStore)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { srv.stop(); cancel() }) }
	t.Cleanup(stop)
	if err := srv.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return srv.addr, stop
}

// ghVerifier returns a function that sends the server at addr a GitHub delivery of one body,
// signed with secret, under an event id, and returns its verdict and operation key. It is safe
// to call from several goroutines.
func ghVerifier(t *testing.T, dir, secret string) func(addr, eventID string) (verdict, opKey string, err error) {
	t.Helper()
	bodyFile := filepath.Join(dir, "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"zen":"backup"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// GitHub signs the body only: one signature for every event id.
	sig := signHeaders(t, "--provider", "github", "--secret", secret, "--body", bodyFile, "--id", "any").Get("X-Hub-Signature-256")
	return func(addr, eventID string) (string, string, error) {
		code, out, errOut := run(t, "", "verify", "--server", addr, "--endpoint", "gh", "--body", bodyFile,
			"-H", "X-GitHub-Delivery: "+eventID, "-H", "X-Hub-Signature-256: "+sig)
		if code != 0 {
			return "", "", fmt.Errorf("verify %s: exit %d: %s", eventID, code, errOut)
		}
		var resp struct{ Verdict, OperationKey string }
		if err := json.Unmarshal([]byte(out), &resp); err != nil {
			return "", "", fmt.Errorf("verify %s printed %q: %v", eventID, out, err)
		}
		return resp.Verdict, resp.OperationKey, nil
	}
}

// TestBackupWhileServingAndRestore takes a backup while deliveries are being accepted, checks
// that it holds every delivery accepted before it began and passes integrity_check, then
// serves the backup, as the README's restore steps say, with the same master key: redeliveries
// of backed-up events are DUPLICATE with their operation keys, the secrets still verify, and an
// event accepted after the backup is accepted again.
func TestBackupWhileServingAndRestore(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "master.key")
	if _, _, err := secretbox.LoadOrCreateKeyFile(keyFile); err != nil {
		t.Fatal(err)
	}
	cfg := &storeConfig{dataDir: filepath.Join(dir, "data"), masterKeyFile: keyFile}
	addr, stop := backupServer(t, cfg)
	remote := []string{"--server", addr}
	for _, args := range [][]string{{"endpoint", "create", "--id", "gh", "--provider", "github"}, {"secret", "add", "--endpoint", "gh"}} {
		if code, _, errOut := run(t, "gh-backup-secret", append(args, remote...)...); code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, errOut)
		}
	}
	verify := ghVerifier(t, dir, "gh-backup-secret")

	var mu sync.Mutex
	opKeys := map[string]string{} // accepted event id -> operation key
	accept := func(id string) error {
		verdict, key, err := verify(addr, id)
		if err == nil && (verdict != "VERDICT_ACCEPTED" || key == "") {
			err = fmt.Errorf("verify %s: %s %q", id, verdict, key)
		}
		if err != nil {
			return err
		}
		mu.Lock()
		opKeys[id] = key
		mu.Unlock()
		return nil
	}
	for i := range 10 {
		if err := accept(fmt.Sprintf("pre-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Deliveries keep arriving while the backup runs.
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				if err := accept(fmt.Sprintf("during-%d-%d", w, i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		mu.Lock()
		n := len(opKeys)
		mu.Unlock()
		if n >= 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d deliveries accepted in a minute", n)
		}
	}
	mu.Lock()
	before := make(map[string]string, len(opKeys))
	for id, key := range opKeys {
		before[id] = key
	}
	mu.Unlock()
	backup := filepath.Join(dir, "backups", "hookverify-backup.db")
	if err := os.Mkdir(filepath.Dir(backup), 0o700); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "backup", "--data-dir", cfg.dataDir, "--out", backup)
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if code != 0 || !strings.Contains(out, "master key") {
		t.Fatalf("backup: exit %d: %q %q", code, out, errOut)
	}
	if err := accept("after-backup"); err != nil {
		t.Fatal(err)
	}
	stop()

	info, err := os.Stat(backup)
	if err != nil {
		t.Fatal(err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("backup file mode %v, want 0600", mode)
	}
	raw, err := os.ReadFile(backup)
	if err != nil {
		t.Fatal(err)
	}
	key, err := secretbox.ReadKeyFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	keyText, _ := os.ReadFile(keyFile)
	if bytes.Contains(raw, key) || bytes.Contains(raw, bytes.TrimSpace(keyText)) || bytes.Contains(raw, []byte("gh-backup-secret")) {
		t.Error("the backup holds the master key or a secret in plain text")
	}
	db, err := sql.Open("sqlite", backup)
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check of the backup: %q %v", check, err)
	}
	for id, key := range before {
		var inInbox int
		if err := db.QueryRow("SELECT count(*) FROM claims c JOIN inbox i ON i.id = c.inbox_id WHERE c.scope = 'gh' AND c.event_id = ? AND c.operation_key = ?",
			id, key).Scan(&inInbox); err != nil || inInbox != 1 {
			t.Fatalf("delivery %s, accepted before the backup began, is not in it (%d, %v)", id, inInbox, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d deliveries accepted before the backup began, %d in all", len(before), len(opKeys))

	// Restore as README says: the server stopped, the backup in place as hookverify.db, the old
	// database's -wal and -shm removed, served again with the same key.
	dbPath := filepath.Join(cfg.dataDir, "hookverify.db")
	if err := os.WriteFile(dbPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{dbPath + "-wal", dbPath + "-shm"} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			t.Fatal(err)
		}
	}
	addr, _ = backupServer(t, cfg)
	for _, id := range []string{"pre-0", "pre-9"} {
		if verdict, key, err := verify(addr, id); err != nil || verdict != "VERDICT_DUPLICATE" || key != before[id] {
			t.Errorf("redelivery of %s after the restore: %s %q %v, want DUPLICATE %q", id, verdict, key, err, before[id])
		}
	}
	for id := range before {
		if strings.HasPrefix(id, "during-") {
			if verdict, key, err := verify(addr, id); err != nil || verdict != "VERDICT_DUPLICATE" || key != before[id] {
				t.Errorf("redelivery of %s after the restore: %s %q %v, want DUPLICATE %q", id, verdict, key, err, before[id])
			}
			break
		}
	}
	// The restore lost what was accepted after the backup: accepted again, as README says.
	if verdict, _, err := verify(addr, "after-backup"); err != nil || verdict != "VERDICT_ACCEPTED" {
		t.Errorf("event accepted after the backup, after the restore: %s %v, want ACCEPTED", verdict, err)
	}
	if verdict, _, err := verify(addr, "new-after-restore"); err != nil || verdict != "VERDICT_ACCEPTED" {
		t.Errorf("new event after the restore (the restored secret verifies): %s %v", verdict, err)
	}
}

// TestBackupRefusals: an existing --out is never replaced, --database-url points to the
// database's own tools, a data dir without a database is refused without creating one, and
// --out is required.
func TestBackupRefusals(t *testing.T) {
	dir := t.TempDir()
	cfg := &storeConfig{dataDir: filepath.Join(dir, "data")}
	if code, out, errOut := run(t, "", "migrate", "--data-dir", cfg.dataDir); code != 0 {
		t.Fatalf("migrate: exit %d %q %q", code, out, errOut)
	}
	existing := filepath.Join(dir, "existing.db")
	if err := os.WriteFile(existing, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"existing out", []string{"--data-dir", cfg.dataDir, "--out", existing}, 1, []string{existing, "exists", "refusing"}},
		{"database url", []string{"--database-url", "postgres://u@db/hv", "--out", filepath.Join(dir, "pg.db")}, 2, []string{"pg_dump", "BACKUP"}},
		{"no database", []string{"--data-dir", empty, "--out", filepath.Join(dir, "none.db")}, 1, []string{"--data-dir " + empty, "no hookverify database"}},
		{"no out", []string{"--data-dir", cfg.dataDir}, 2, []string{"--out"}},
		{"stray", []string{"--data-dir", cfg.dataDir, "--out", filepath.Join(dir, "x.db"), "stray"}, 2, []string{"stray"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, "", append([]string{"backup"}, c.args...)...)
			if code != c.code || out != "" {
				t.Errorf("exit %d, stdout %q; want exit %d, no output", code, out, c.code)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
	if b, _ := os.ReadFile(existing); string(b) != "keep" {
		t.Errorf("existing file changed to %q", b)
	}
	if _, err := os.Stat(empty); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a refused backup created the data dir %s: %v", empty, err)
	}
	for _, f := range []string{"pg.db", "none.db", "x.db"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused backup wrote %s: %v", f, err)
		}
	}
}

// TestBackupNamesUnfinishedCopies: a backup killed outright leaves its unfinished copy (a copy
// of the inbox like any backup) beside --out under a hidden name; the next backup to that
// --out names it on stderr, and leaves it, since it may be a backup still running.
func TestBackupNamesUnfinishedCopies(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if code, out, errOut := run(t, "", "migrate", "--data-dir", dataDir); code != 0 {
		t.Fatalf("migrate: exit %d %q %q", code, out, errOut)
	}
	out := filepath.Join(dir, "nightly.db")
	left := filepath.Join(dir, ".nightly.db.partial-1234")
	if err := os.WriteFile(left, []byte("half a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := run(t, "", "backup", "--data-dir", dataDir, "--out", out)
	if code != 0 || !strings.Contains(stdout, "backed up") {
		t.Fatalf("backup: exit %d %q %q", code, stdout, errOut)
	}
	if !strings.Contains(errOut, left) || !strings.Contains(errOut, "unfinished") {
		t.Errorf("stderr %q does not name the unfinished copy %s", errOut, left)
	}
	if _, err := os.Stat(left); err != nil {
		t.Errorf("the unfinished copy is gone: %v", err)
	}
	if got := sqlite.UnfinishedBackups(out); len(got) != 1 || got[0] != left {
		t.Errorf("UnfinishedBackups = %q, want only %s (the backup's own copy is gone)", got, left)
	}
	// Another --out has none of its own.
	code, _, errOut = run(t, "", "backup", "--data-dir", dataDir, "--out", filepath.Join(dir, "weekly.db"))
	if code != 0 || strings.Contains(errOut, "unfinished") {
		t.Errorf("backup to another --out: exit %d, stderr %q", code, errOut)
	}
}
