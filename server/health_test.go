package server_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestReadyzNotReadyOnceShutdownBegins: /readyz is what HTTP-probing balancers and Kubernetes
// readiness probes read. Once shutdown begins the server takes no new calls (gRPC health says
// NOT_SERVING for good), yet the store stays open while the calls under way drain, and /readyz
// answered 200 "ready" for the whole drain, so such a balancer kept sending deliveries to an
// instance that refuses them.
func TestReadyzNotReadyOnceShutdownBegins(t *testing.T) {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	srv, err := server.New(server.Options{Keyring: testpki.Keyring(t), Protocols: protocol.Default()})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStore(st)
	readyz := func() int {
		w := httptest.NewRecorder()
		srv.HTTPHandler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
		return w.Code
	}
	if code := readyz(); code != http.StatusOK {
		t.Fatalf("/readyz with the store open = %d, want 200", code)
	}
	srv.Shutdown()
	if code := readyz(); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz once shutdown began, the store still open for the drain = %d, want 503", code)
	}
}
