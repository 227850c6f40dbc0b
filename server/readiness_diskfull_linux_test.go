//go:build linux

package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestHealthFollowsAFullSQLiteFileSystem: with the SQLite store's file system full, every
// read answered, so the inbox monitor kept gRPC health SERVING and /readyz 200 while every
// claim that needed room failed: balancers kept sending deliveries that could only be
// answered UNAVAILABLE. Both now say not ready at the monitor's next read, and ready again at
// the first read after room is made, without a restart.
func TestHealthFollowsAFullSQLiteFileSystem(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8388608", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small file system (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv, err := New(Options{Keyring: testpki.Keyring(t), Protocols: protocol.Default()})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStore(st)
	readyz := func() int {
		w := httptest.NewRecorder()
		srv.HTTPHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return w.Code
	}
	want := func(when string, health healthpb.HealthCheckResponse_ServingStatus, code int) {
		t.Helper()
		srv.RefreshInboxDepth(t.Context())
		if got := healthIs(t, srv); got != health {
			t.Errorf("%s: gRPC health %v, want %v", when, got, health)
		}
		if got := readyz(); got != code {
			t.Errorf("%s: /readyz %d, want %d", when, got, code)
		}
	}
	want("with room", healthpb.HealthCheckResponse_SERVING, http.StatusOK)

	filler := filepath.Join(dir, "filler")
	f, err := os.OpenFile(filler, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 64<<10); ; {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	_ = f.Close()
	want("on a full file system", healthpb.HealthCheckResponse_NOT_SERVING, http.StatusServiceUnavailable)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	want("with room again", healthpb.HealthCheckResponse_SERVING, http.StatusOK)
}
