//go:build linux

package sqlite

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPingPassesOnAFileSystemThatReportsNoSize: a file system that reports no size at all
// (f_blocks 0: a FUSE file system without a statfs handler, whose library answers zeros; some
// network and pseudo file systems do the same) says nothing about its free space, and writes
// on it succeed. Read as "0 KiB free", it made Ping, /readyz and gRPC health say not ready for
// as long as the server ran, with every claim committing. Not parallel: it replaces statfs.
func TestPingPassesOnAFileSystemThatReportsNoSize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	real := statfs
	t.Cleanup(func() { statfs = real })
	statfs = func(p string, st *unix.Statfs_t) error {
		if err := real(p, st); err != nil {
			return err
		}
		// What libfuse answers for a file system that implements no statfs.
		*st = unix.Statfs_t{Type: st.Type, Bsize: 512, Namelen: 255}
		return nil
	}
	if err := s.Ping(t.Context()); err != nil {
		t.Errorf("Ping on a file system that reports no size = %v; want ready (it says nothing of its free space)", err)
	}
	if err := inboxStatsErr(s); err != nil {
		t.Errorf("InboxStats on a file system that reports no size = %v; want nil", err)
	}
	if r, err := s.Claim(t.Context(), deliveryOfSize(1, 100)); err != nil || !r.Accepted {
		t.Fatalf("claim = %+v, %v; want accepted (the file system takes writes)", r, err)
	}
}
