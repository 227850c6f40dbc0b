package sqlite

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// deliveryOfSize is a delivery of event n to ep-1 with a body of size bytes.
func deliveryOfSize(n, size int) storage.Delivery {
	return storage.Delivery{InboxID: fmt.Sprint("inbox-", n), Scope: "ep-1", EventID: fmt.Sprint("evt-", n), EndpointID: "ep-1",
		OperationKey: fmt.Sprint("op-", n), Method: "POST", URL: "https://h/x", Body: make([]byte, size), ReceivedAt: time.Unix(2, 0).UTC()}
}

// copyAsOnDisk copies the store's files at path, as they are on disk now, into a new directory
// and opens them there: what a start after a crash at this moment would find.
func copyAsOnDisk(t *testing.T, path string) *Store {
	t.Helper()
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "hookverify.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return openAt(t, filepath.Join(dir, "hookverify.db"))
}

// openAt opens the store at path, closed when the test ends.
func openAt(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// storeWithDeletedLog opens a store, has evt-0 of ep-1 accepted, then deletes the write-ahead
// log under it, and returns the store and the database file's path.
func storeWithDeletedLog(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s := openAt(t, path)
	createStripeEndpoint(t, s, "ep-1")
	if r, err := s.Claim(t.Context(), deliveryOfSize(0, 100)); err != nil || !r.Accepted {
		t.Fatalf("claim before the deletion = %+v, %v", r, err)
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	return s, path
}

// TestWritesRefusedOnceTheLogIsDeleted: SQLite keeps writing to a write-ahead log deleted
// while it is open, and a restart finds none of it. Once the log is gone (a cleaner of old
// files, an operator), claims are UNAVAILABLE, not ACCEPTED, even after another connection
// has created a new, empty log at the path; the health check says so; and what was accepted
// before survives a crash.
func TestWritesRefusedOnceTheLogIsDeleted(t *testing.T) {
	t.Parallel()
	s, path := storeWithDeletedLog(t)
	_, err := s.Claim(t.Context(), deliveryOfSize(1, 100))
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), path+"-wal") {
		t.Fatalf("claim after the log was deleted: %v; want ErrUnavailable naming %s", err, path+"-wal")
	}
	if err := s.Ping(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Ping after the log was deleted = %v, want ErrUnavailable", err)
	}
	// A new connection (a reader the pool opens, another process) creates a log at the path
	// again, empty; the writer still writes to the deleted one.
	var n int64
	if err := s.reader.QueryRowContext(t.Context(), "SELECT count(*) FROM claims").Scan(&n); err != nil {
		t.Fatal(err)
	}
	other, err := Open(t.Context(), path)
	if err == nil {
		_ = other.Close()
	}
	if _, err := os.Stat(path + "-wal"); err != nil {
		t.Logf("no new log at the path: %v", err)
	}
	if _, err := s.Claim(t.Context(), deliveryOfSize(2, 100)); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("claim after a new log appeared at the path = %v, want ErrUnavailable", err)
	}
	crashed := copyAsOnDisk(t, path)
	if _, err := crashed.LookupClaim(t.Context(), "ep-1", "evt-0"); err != nil {
		t.Fatalf("the claim accepted before the deletion, after a crash: %v", err)
	}
}

// TestWritesRefusedOnceTheDatabaseFileIsDeleted: the same for the database file itself.
func TestWritesRefusedOnceTheDatabaseFileIsDeleted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s := openAt(t, path)
	createStripeEndpoint(t, s, "ep-1")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err := s.Claim(t.Context(), deliveryOfSize(1, 100))
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), path+" was deleted") {
		t.Fatalf("claim after the database file was deleted: %v; want ErrUnavailable naming %s", err, path)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Ping after the database file was deleted = %v, want ErrUnavailable", err)
	}
}

// TestFilesCheckHasNoFalseAlarm: the check of the files refuses nothing when they are only
// what SQLite made of them: opened through a symbolic link (SQLite names the log after the
// file the link leads to), every pooled connection closed and opened again (the last to close
// would delete the log, and the next create a new one), the store closed and opened again.
func TestFilesCheckHasNoFalseAlarm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.db")
	if err := os.Symlink(filepath.Join(dir, "real", "hookverify.db"), link); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		s, err := Open(t.Context(), link)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			createStripeEndpoint(t, s, "ep-1")
		}
		s.writer.SetMaxIdleConns(0)
		s.reader.SetMaxIdleConns(0)
		for i := range 3 {
			n := 10*round + i
			if r, err := s.Claim(t.Context(), deliveryOfSize(n, 100)); err != nil || !r.Accepted {
				t.Fatalf("round %d, claim %d = %+v, %v", round, n, r, err)
			}
		}
		if err := s.Ping(t.Context()); err != nil {
			t.Fatalf("round %d: Ping = %v", round, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// smallFileSystem mounts a tmpfs of size bytes and returns its directory, or skips the test
// where mounting is not allowed (not root, no tmpfs).
func smallFileSystem(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small file system (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// fill writes a file in dir until the file system is full and returns its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return path
		}
	}
}

// TestWritesOnARealFullFileSystem: on a file system that is full (ENOSPC while the log grows,
// not max_page_count as in TestClaimOnAFullDisk), claims, acks, nacks and leases are
// ErrUnavailable naming the cause, change nothing, and succeed once there is room again,
// without a restart.
func TestWritesOnARealFullFileSystem(t *testing.T) {
	t.Parallel()
	dir := smallFileSystem(t, 4<<20)
	s, err := Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")
	for i := range 3 {
		if _, err := s.Claim(t.Context(), deliveryOfSize(i, 100)); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	lease := storage.LeaseRequest{Max: 2, Visibility: time.Hour, MaxAttempts: 1, LeaseToken: "tok-1", Now: now}
	leased, err := s.Lease(t.Context(), lease)
	if err != nil || len(leased.Deliveries) != 2 {
		t.Fatalf("lease = %+v, %v", leased, err)
	}
	filler := fill(t, dir)
	// The log reuses its space after a checkpoint: grow it until a claim no longer fits.
	full := -1
	for i := 100; i < 200 && full < 0; i++ {
		if _, err := s.Claim(t.Context(), deliveryOfSize(i, 64<<10)); err != nil {
			if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "disk is full") {
				t.Fatalf("claim on a full file system: %v; want ErrUnavailable saying the disk is full", err)
			}
			full = i
		}
	}
	if full < 0 {
		t.Fatal("the file system never filled")
	}
	if _, err := s.LookupClaim(t.Context(), "ep-1", fmt.Sprint("evt-", full)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("LookupClaim of the failed claim = %v, want ErrNotFound", err)
	}
	first, second := leased.Deliveries[0].InboxID, leased.Deliveries[1].InboxID
	if err := s.Ack(t.Context(), first, "tok-1", now); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("ack on a full file system = %v, want ErrUnavailable", err)
	}
	if _, err := s.Nack(t.Context(), second, "tok-1", now, 1, "failed", now); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("nack on a full file system = %v, want ErrUnavailable", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Claim(t.Context(), deliveryOfSize(full, 64<<10)); err != nil || !r.Accepted {
		t.Fatalf("claim with room again = %+v, %v", r, err)
	}
	if err := s.Ack(t.Context(), first, "tok-1", now); err != nil {
		t.Fatalf("ack with room again = %v", err)
	}
	if dead, err := s.Nack(t.Context(), second, "tok-1", now, 1, "failed", now); err != nil || !dead {
		t.Fatalf("nack with room again = %v, %v; want dead (its one attempt used by the worker)", dead, err)
	}
}

// TestReadsReportDeletedFilesAndRescueTheLog: with no write coming (a quiet night), the log's
// deletion was noticed by nobody: the inbox stats, which the server's health follows, still
// answered, and what the deleted log held went with the process if it was killed before a
// write. The stats now fail, and the first look copies the log into the database file.
func TestReadsReportDeletedFilesAndRescueTheLog(t *testing.T) {
	t.Parallel()
	s, path := storeWithDeletedLog(t)
	if _, err := s.InboxStats(t.Context()); !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), path+"-wal") {
		t.Fatalf("InboxStats after the log was deleted: %v; want ErrUnavailable naming %s", err, path+"-wal")
	}
	// A kill now: only the database file is left.
	crashed := copyAsOnDisk(t, path)
	if _, err := crashed.LookupClaim(t.Context(), "ep-1", "evt-0"); err != nil {
		t.Fatalf("the claim accepted before the deletion, after a kill with no write since: %v", err)
	}
}
