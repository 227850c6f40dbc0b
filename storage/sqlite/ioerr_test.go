package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// swapFDs points every descriptor of this process open on path at the file open returns, and
// returns a function that points them at path opened read-write again.
func swapFDs(t *testing.T, path string, open func() (*os.File, error)) (restore func()) {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	var fds []int
	for _, e := range entries {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || target != path {
			continue
		}
		var fd int
		if _, err := fmtSscan(e.Name(), &fd); err == nil {
			fds = append(fds, fd)
		}
	}
	if len(fds) == 0 {
		t.Fatalf("no descriptor open on %s", path)
	}
	swap := func(f *os.File) {
		for _, fd := range fds {
			if err := syscall.Dup3(int(f.Fd()), fd, syscall.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
		}
		_ = f.Close()
	}
	f, err := open()
	if err != nil {
		t.Fatal(err)
	}
	swap(f)
	return func() {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		swap(f)
	}
}

// TestWriteErrorOnTheLog: the log's writes or its fsync failing (SQLITE_IOERR)
// fail the claim batch with ErrUnavailable and leave nothing of it; once writes work again the
// same deliveries are accepted, and a start after a crash finds them once.
func TestWriteErrorOnTheLog(t *testing.T) {
	t.Parallel()
	for name, open := range map[string]func(wal string) (*os.File, error){
		"write fails": func(wal string) (*os.File, error) { return os.Open(wal) },
		// Writes succeed (and vanish), fsync fails with EINVAL: SQLITE_IOERR_FSYNC.
		"fsync fails": func(string) (*os.File, error) { return os.OpenFile(os.DevNull, os.O_RDWR, 0) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			writeErrorOnTheLog(t, open)
		})
	}
}

func writeErrorOnTheLog(t *testing.T, open func(wal string) (*os.File, error)) {
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s := openAt(t, path)
	createStripeEndpoint(t, s, "ep-1")
	wal, err := filepath.EvalSymlinks(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	batch := []storage.Delivery{deliveryOfSize(1, 100), deliveryOfSize(2, 30000)}
	restore := swapFDs(t, wal, func() (*os.File, error) { return open(wal) })
	results, errs, err := s.commitClaims(batch)
	restore()
	if !errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("claim batch while the log cannot be written = %+v, %v, %v; want ErrUnavailable", results, errs, err)
	}
	t.Logf("failed batch: %v", err)
	for _, d := range batch {
		if c, err := s.LookupClaim(t.Context(), "ep-1", d.EventID); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("LookupClaim(%s) after the failed batch = %+v, %v; want ErrNotFound", d.EventID, c, err)
		}
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 0 {
		t.Fatalf("CountDeliveries after the failed batch = %d, %v; want 0", n, err)
	}
	for _, d := range batch {
		if r, err := s.Claim(t.Context(), d); err != nil || !r.Accepted {
			t.Fatalf("claim %s once the log can be written = %+v, %v; want accepted", d.EventID, r, err)
		}
	}
	after := copyAsOnDisk(t, path)
	if n, err := after.CountDeliveries(t.Context(), ""); err != nil || n != 2 {
		t.Fatalf("after a crash: CountDeliveries = %d, %v; want 2", n, err)
	}
	for _, d := range batch {
		if c, err := after.LookupClaim(t.Context(), "ep-1", d.EventID); err != nil || c.InboxID != d.InboxID {
			t.Fatalf("after a crash: LookupClaim(%s) = %+v, %v", d.EventID, c, err)
		}
	}
}

func fmtSscan(s string, fd *int) (int, error) { return fmt.Sscan(s, fd) }
