package server_test

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

const (
	healthServing    = healthpb.HealthCheckResponse_SERVING
	healthNotServing = healthpb.HealthCheckResponse_NOT_SERVING
)

// mhReadyz answers GET /readyz on srv's HTTP handler.
func mhReadyz(t *testing.T, h http.Handler) int {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return w.Code
}

// TestReadyzFollowsTheInboxMonitor: README and setStorageAnswering say /readyz and gRPC
// health agree (NOT_SERVING "as /readyz answers 503"). /readyz only pinged the store, so while
// the inbox monitor's reads failed or hung (a table lock, a statement the database refuses)
// and health said NOT_SERVING, /readyz said 200: an HTTP-probing balancer or Kubernetes kept
// sending deliveries to an instance a gRPC-probing one had taken out.
func TestReadyzFollowsTheInboxMonitor(t *testing.T) {
	e, outage := newEnvWithStatsOutage(t, backends[0], nil)
	h := e.srv.HTTPHandler()
	e.srv.RefreshInboxDepth(t.Context())
	if code := mhReadyz(t, h); code != http.StatusOK {
		t.Fatalf("/readyz with the store answering = %d, want 200", code)
	}
	outage.down.Store(true)
	e.srv.RefreshInboxDepth(t.Context())
	wantHealth(t, e.instance, healthNotServing)
	if code := mhReadyz(t, h); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz while the inbox monitor cannot read the store (health NOT_SERVING) = %d, want 503", code)
	}
	outage.down.Store(false)
	e.srv.RefreshInboxDepth(t.Context())
	wantHealth(t, e.instance, healthServing)
	if code := mhReadyz(t, h); code != http.StatusOK {
		t.Errorf("/readyz once the monitor reads the store again = %d, want 200", code)
	}
}

// TestReadyzAndHealthOnDeletedSQLiteFiles: RELIABILITY.md says that once the SQLite
// database file, its log or its -shm is deleted under a running store, /readyz answers 503 and
// gRPC health turns NOT_SERVING at the monitor's next read.
func TestReadyzAndHealthOnDeletedSQLiteFiles(t *testing.T) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		t.Run("hookverify.db"+suffix, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "hookverify.db")
			st := openStore(t, backends[0], path)
			e := newEnvOn(t, backends[0], path, st)
			h := e.srv.HTTPHandler()
			e.srv.RefreshInboxDepth(t.Context())
			if code := mhReadyz(t, h); code != http.StatusOK {
				t.Fatalf("/readyz before = %d, want 200", code)
			}
			if err := os.Remove(path + suffix); err != nil {
				t.Fatal(err)
			}
			if code := mhReadyz(t, h); code != http.StatusServiceUnavailable {
				t.Errorf("/readyz once %s was deleted = %d, want 503", suffix, code)
			}
			e.srv.RefreshInboxDepth(t.Context())
			wantHealth(t, e.instance, healthNotServing)
		})
	}
}

// counterSeries returns every series of the counter family name, keyed by its labels as
// "k=v,k=v" (sorted by label name, as the registry gives them).
func counterSeries(t *testing.T, m *server.Metrics, name string) map[string]float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			var parts []string
			for _, l := range s.GetLabel() {
				parts = append(parts, l.GetName()+"="+l.GetValue())
			}
			out[strings.Join(parts, ",")] = s.GetCounter().GetValue()
		}
	}
	return out
}

// TestVerdictCounts: each Verify answer is counted once, under its own verdict: an
// accepted event as accepted, its redelivery (from the store and from the claim cache) as
// duplicate, a forged one as rejected with its reason, and a call refused for backpressure or
// a store failure not as a verdict at all. With the claim cache off, the redelivery under
// backpressure is answered from the store's claim.
func TestVerdictCounts(t *testing.T) {
	for _, cache := range []bool{true, false} {
		t.Run(fmt.Sprintf("claim cache %v", cache), func(t *testing.T) {
			metrics := server.NewMetrics()
			e := newEnvWith(t, backends[0], func(o *server.Options) {
				o.Metrics = metrics
				o.MaxPendingPerEndpoint = 1
				if !cache {
					o.ClaimCacheSize = -1
				}
			})
			secret, _ := e.setup(t, githubProvider, "ep")
			first := e.deliver(t, githubProvider, "ep", "evt-1", secret)
			firstResp := e.accept(t, first)
			e.duplicate(t, first, firstResp)
			e.reject(t, e.deliver(t, githubProvider, "ep", "evt-2", "wrong-secret-wrong-secret"), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)
			e.srv.RefreshInboxDepth(t.Context())
			// The inbox holds one unfinished delivery, the limit: a new event is refused, a
			// redelivery answered DUPLICATE.
			_, err := e.call(t, e.deliver(t, githubProvider, "ep", "evt-3", secret))
			wantCode(t, err, codes.ResourceExhausted)
			e.duplicate(t, first, firstResp)

			got := counterSeries(t, metrics, "hookverify_verdicts_total")
			want := map[string]float64{
				"endpoint=ep,provider=github,reason=,verdict=accepted":                   1,
				"endpoint=ep,provider=github,reason=,verdict=duplicate":                  2,
				"endpoint=ep,provider=github,reason=signature_mismatch,verdict=rejected": 1,
			}
			if !maps.Equal(got, want) {
				t.Errorf("hookverify_verdicts_total = %v, want %v", got, want)
			}
			if bp := counterSeries(t, metrics, "hookverify_backpressure_total"); bp["endpoint=ep"] != 1 {
				t.Errorf("hookverify_backpressure_total = %v, want ep at 1", bp)
			}
			if hits := counterSeries(t, metrics, "hookverify_claim_cache_hits_total"); !cache && hits[""] != 0 {
				t.Errorf("claim cache hits with the cache off: %v", hits)
			}
		})
	}
}

// secretUses returns hookverify_secret_verifications_total by secret id (0 for a secret with no
// series).
func secretUses(t *testing.T, m *server.Metrics) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for labels, v := range counterSeries(t, m, "hookverify_secret_verifications_total") {
		for _, l := range strings.Split(labels, ",") {
			if id, ok := strings.CutPrefix(l, "secret_id="); ok {
				out[id] = v
			}
		}
	}
	return out
}
