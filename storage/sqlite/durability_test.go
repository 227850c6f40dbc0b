package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// connPragmas reads the durability settings of one connection.
func connPragmas(t *testing.T, ctx context.Context, conn *sql.Conn) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"journal_mode", "synchronous", "foreign_keys", "busy_timeout", "secure_delete"} {
		var v any
		if err := conn.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
			t.Fatalf("PRAGMA %s: %v", name, err)
		}
		out[name] = fmt.Sprint(v)
	}
	return out
}

// TestPragmasOnEveryConnection: every connection of every pool, those the pools open
// later (all readers at once, a writer opened again after its connection was dropped)
// included, runs with WAL, synchronous=FULL, the busy timeout, foreign keys and secure delete.
func TestPragmasOnEveryConnection(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := OpenWith(ctx, filepath.Join(t.TempDir(), "hookverify.db"), Options{BusyTimeout: 1234 * time.Millisecond, MaxReaders: 5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	want := map[string]string{"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "1234", "secure_delete": "1"}
	check := func(what string, conn *sql.Conn) {
		t.Helper()
		for k, v := range connPragmas(t, ctx, conn) {
			if v != want[k] {
				t.Errorf("%s: PRAGMA %s = %s, want %s", what, k, v, want[k])
			}
		}
	}
	// All readers at once: the pool opens new ones.
	var conns []*sql.Conn
	for i := range 5 {
		c, err := s.reader.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		check(fmt.Sprint("reader ", i), c)
	}
	for _, c := range conns {
		_ = c.Close()
	}
	for round := range 2 {
		c, err := s.writer.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprint("writer, round ", round), c)
		// Drop the connection: the pool opens a new one for the next use.
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
		_ = c.Close()
	}
	// And the store still writes through the new writer connection.
	createStripeEndpoint(t, s, "ep-1")
	if r, err := s.Claim(ctx, deliveryOfSize(1, 10)); err != nil || !r.Accepted {
		t.Fatalf("claim after the writer was reopened = %+v, %v", r, err)
	}
}

// TestFileModes: the database file, its -wal and -shm are 0600, whatever the umask.
func TestFileModes(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hookverify.db")
	s := openAt(t, path)
	createStripeEndpoint(t, s, "ep-1")
	for _, suffix := range []string{"", "-wal", "-shm"} {
		info, err := os.Stat(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if m := info.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode %v, want 0600", path+suffix, m)
		}
	}
}

// TestBusyPastTheTimeoutIsUnavailable: another process holding the write lock longer
// than the busy timeout makes every write ErrUnavailable, never accepted nor invalid.
func TestBusyPastTheTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s, err := OpenWith(ctx, path, Options{BusyTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")
	other, err := sql.Open("sqlite", dsn(path, time.Second, writerConn))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hold, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if _, err := hold.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(ctx, deliveryOfSize(1, 10))
	if !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("claim while another process holds the lock: %v, want ErrUnavailable only", err)
	}
	ep := storage.Endpoint{ID: "ep-2", Provider: "stripe", TimestampTolerance: time.Minute, MaxBodyBytes: 1 << 20,
		DedupeScope: "ep-2", CreatedAt: time.Unix(1, 0), UpdatedAt: time.Unix(1, 0)}
	if err := s.CreateEndpoint(ctx, ep); !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("CreateEndpoint while another process holds the lock: %v, want ErrUnavailable only", err)
	}
	if _, err := hold.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Claim(ctx, deliveryOfSize(1, 10)); err != nil || !r.Accepted {
		t.Fatalf("claim once the lock is free = %+v, %v", r, err)
	}
}

func execCommand(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// readOnlyView bind-mounts dir read-only at a new directory and returns it, or skips.
func readOnlyView(t *testing.T, dir string) string {
	t.Helper()
	view := t.TempDir()
	if out, err := execCommand("mount", "--bind", dir, view); err != nil {
		t.Skipf("bind mount: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = execCommand("umount", "-l", view) })
	if out, err := execCommand("mount", "-o", "remount,ro,bind", view); err != nil {
		t.Skipf("remount read-only: %v: %s", err, out)
	}
	return view
}

// TestOpenOnAReadOnlyFileSystem: a database on a file system mounted read-only (after an
// I/O error, say) is not served: Open fails with ErrUnavailable, or, if it opens, no write is
// ever reported done.
func TestOpenOnAReadOnlyFileSystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	createStripeEndpoint(t, s, "ep-1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, keepLog := range []bool{false, true} {
		t.Run(fmt.Sprint("log left: ", keepLog), func(t *testing.T) {
			if keepLog {
				s := openAt(t, filepath.Join(dir, "hookverify.db"))
				if r, err := s.Claim(t.Context(), deliveryOfSize(1, 10)); err != nil || !r.Accepted {
					t.Fatal(r, err)
				}
				// Still open, as a killed store's: its -wal and -shm are there.
				view := readOnlyView(t, dir)
				checkReadOnly(t, view)
				return
			}
			checkReadOnly(t, readOnlyView(t, dir))
		})
	}
}

func checkReadOnly(t *testing.T, view string) {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(view, "hookverify.db"))
	if err != nil {
		if !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrInvalid) {
			t.Fatalf("Open on a read-only file system: %v, want ErrUnavailable", err)
		}
		t.Logf("Open refused: %v", err)
		return
	}
	defer s.Close()
	r, err := s.Claim(t.Context(), deliveryOfSize(7, 10))
	if err == nil || !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("claim on a read-only file system = %+v, %v; want ErrUnavailable only", r, err)
	}
	t.Logf("claim refused: %v", err)
}
