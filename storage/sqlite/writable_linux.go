//go:build linux

package sqlite

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// statfs is unix.Statfs; a test replaces it to simulate a read-only file system, which a
// test cannot mount under an open database (the kernel refuses to remount with files open
// for writing; only an I/O error does it).
var statfs = unix.Statfs

// minFreeBytes is the free space below which the file system counts as full. A claim batch
// appends its deliveries (bodies up to an endpoint's MaxBodyBytes, 1 MiB by default) to the
// write-ahead log and the checkpoint grows the database file by as much, so below this the
// commits that need room fail with "database or disk is full". Any disk a database lives on
// has far more: one that is nearly full but working stays ready (a megabyte is 0.01 % of 10
// GiB), and the alerts on disk space see it first.
const minFreeBytes = 1 << 20

// mayUseReserved is whether this process may write into the blocks ext4 reserves (5 % by
// default) for uid 0: then the free blocks count, else only those available to others.
var mayUseReserved = os.Geteuid() == 0

// fsRefusesWrites returns why the file system holding path cannot take a commit, or nil:
// mounted or remounted read-only (ext4's errors=remount-ro after an I/O error), or less than
// minFreeBytes free (when it reports its size at all). Reads go on working then while every
// claim fails. One statfs, no write: it runs at every Ping and inbox monitor read. A statfs
// that fails says nothing here (a missing file is checkFiles' to report).
func fsRefusesWrites(path string) error {
	var st unix.Statfs_t
	if err := statfs(path, &st); err != nil {
		return nil
	}
	if st.Flags&unix.ST_RDONLY != 0 {
		return fmt.Errorf("the file system holding %s is read-only (mounted so, or remounted after an I/O error), so every write fails: check it and remount it read-write", path)
	}
	if st.Blocks == 0 {
		// A file system that reports no size (a FUSE file system without a statfs handler,
		// whose library answers zeros; some network and pseudo file systems) says nothing of
		// its free space: read as 0 bytes free, it kept the server not ready while every
		// write succeeded. Only its failed writes can tell.
		return nil
	}
	blocks := st.Bavail
	if mayUseReserved {
		blocks = st.Bfree
	}
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	if free := blocks * unit; free < minFreeBytes {
		return fmt.Errorf("the file system holding %s is full (%d KiB free, under %d KiB), so commits that need room fail: free space on it", path, free>>10, minFreeBytes>>10)
	}
	return nil
}
