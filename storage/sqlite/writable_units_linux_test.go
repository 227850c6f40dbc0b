//go:build linux

package sqlite

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFreeSpaceCountsTheRightBlocks: the free-space check reads statfs's free blocks in
// fragment units (f_frsize, which a file system may report smaller than f_bsize: the block
// counts are in f_frsize), and counts the blocks reserved for root (ext4's 5 %) only when this
// process may write into them. TestPingRefusesAFullFileSystem's tmpfs has no reserve and equal
// sizes, so it sees neither. Not parallel: it replaces statfs and mayUseReserved.
func TestFreeSpaceCountsTheRightBlocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hookverify.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	realStatfs, realReserved := statfs, mayUseReserved
	t.Cleanup(func() { statfs, mayUseReserved = realStatfs, realReserved })
	var fake unix.Statfs_t
	statfs = func(_ string, st *unix.Statfs_t) error { *st = fake; return nil }
	full := func(when string, want bool) {
		t.Helper()
		err := fsRefusesWrites(path)
		if got := err != nil && strings.Contains(err.Error(), "full"); got != want {
			t.Errorf("%s: fsRefusesWrites = %v; want full %v", when, err, want)
		}
	}

	// 400 KiB free in 4 KiB fragments, on a file system whose preferred block is 1 MiB: full
	// (read in f_bsize units it is 100 MiB).
	fake = unix.Statfs_t{Bsize: 1 << 20, Frsize: 4096, Blocks: 1 << 20, Bfree: 100, Bavail: 100}
	full("400 KiB free, f_frsize 4 KiB, f_bsize 1 MiB", true)
	// No fragment size reported: f_bsize is the unit.
	fake = unix.Statfs_t{Bsize: 4096, Blocks: 1 << 20, Bfree: 100, Bavail: 100}
	full("400 KiB free, no f_frsize, f_bsize 4 KiB", true)
	fake = unix.Statfs_t{Bsize: 4096, Blocks: 1 << 20, Bfree: 1000, Bavail: 1000}
	full("4000 KiB free, no f_frsize, f_bsize 4 KiB", false)

	// 100 MiB free, all of it in root's reserve.
	fake = unix.Statfs_t{Bsize: 4096, Frsize: 4096, Blocks: 1 << 20, Bfree: 25600, Bavail: 0}
	// This process, as it runs: root may write the reserve, others may not.
	full("only root's reserve free, as this process", os.Geteuid() != 0)
	mayUseReserved = true
	full("only root's reserve free, for root", false)
	mayUseReserved = false
	full("only root's reserve free, for another user", true)
}
