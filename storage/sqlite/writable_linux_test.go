//go:build linux

package sqlite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hookverify/hookverify/storage"
)

// TestPingRefusesAReadOnlyFileSystem: a file system remounted read-only under the store (ext4
// does so after an I/O error, errors=remount-ro) leaves every read working, so Ping, and with
// it /readyz, said ready while every claim failed. Ping now says ErrUnavailable, naming the
// cause, and passes again once the file system takes writes. Not parallel: it replaces the
// package's statfs while no other test runs.
func TestPingRefusesAReadOnlyFileSystem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping on a writable file system = %v", err)
	}
	real := statfs
	t.Cleanup(func() { statfs = real })
	statfs = func(p string, st *unix.Statfs_t) error {
		if err := real(p, st); err != nil {
			return err
		}
		st.Flags |= unix.ST_RDONLY
		return nil
	}
	err = s.Ping(t.Context())
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Ping on a read-only file system = %v; want ErrUnavailable saying it is read-only", err)
	}
	// The server's inbox monitor asks this, for gRPC health.
	if err := inboxStatsErr(s); !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("InboxStats on a read-only file system = %v; want ErrUnavailable saying it is read-only", err)
	}
	statfs = real
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping once the file system takes writes again = %v", err)
	}
	if err := inboxStatsErr(s); err != nil {
		t.Fatalf("InboxStats once the file system takes writes again = %v", err)
	}
}

// TestPingRefusesAFullFileSystem: on a real file system filled up (a small tmpfs), Ping said
// ready while commits that need room failed with "database or disk is full". Ping now says
// ErrUnavailable, and passes again once there is room, without a restart. A file system that
// is nearly full but has room above the floor stays ready.
func TestPingRefusesAFullFileSystem(t *testing.T) {
	t.Parallel()
	dir := smallFileSystem(t, 8<<20)
	s, err := Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	createStripeEndpoint(t, s, "ep-1")

	// Nearly full: leave twice the floor.
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Frsize)
	nearly := filepath.Join(dir, "nearly")
	if err := os.WriteFile(nearly, make([]byte, free-2*minFreeBytes), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping with %d bytes free = %v; want ready", 2*minFreeBytes, err)
	}
	if r, err := s.Claim(t.Context(), deliveryOfSize(1, 100)); err != nil || !r.Accepted {
		t.Fatalf("claim with %d bytes free = %+v, %v; want accepted", 2*minFreeBytes, r, err)
	}

	filler := fill(t, dir)
	err = s.Ping(t.Context())
	if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), "full") {
		t.Fatalf("Ping on a full file system = %v; want ErrUnavailable saying it is full", err)
	}
	// Claims that need room do fail meanwhile: the health check is not a false alarm.
	failed := false
	for i := 100; i < 200 && !failed; i++ {
		_, err := s.Claim(t.Context(), deliveryOfSize(i, 64<<10))
		failed = errors.Is(err, storage.ErrUnavailable)
	}
	if !failed {
		t.Error("claims kept succeeding on the full file system")
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping with room again = %v", err)
	}
}

// inboxStatsErr is the error of s.InboxStats, the inbox monitor's read, whose answers the
// server's health follows.
func inboxStatsErr(s *Store) error {
	_, err := s.InboxStats(context.Background())
	return err
}
