package server

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// scriptedStats is a store whose InboxStats, while hang is set, waits until it is cleared
// (a connection that hangs without an error), and while slowFail is above zero sleeps that
// long, once, and fails (a read that hung until the connection broke); else it answers stats.
// answered counts the reads that answered. With afterFail set, the first read after the slow
// failure sends the time between the failure and its own start on afterFail, then waits until
// release is closed: a test sees the NOT_SERVING between them however late it is scheduled.
type scriptedStats struct {
	storage.Store
	stats    []storage.EndpointInboxStats
	hang     atomic.Bool
	slowFail atomic.Int64
	answered atomic.Int64

	failedAt  atomic.Pointer[time.Time]
	afterFail chan time.Duration // buffered, one
	release   chan struct{}
}

func (s *scriptedStats) InboxStats(ctx context.Context) ([]storage.EndpointInboxStats, error) {
	if at := s.failedAt.Swap(nil); at != nil && s.afterFail != nil {
		s.afterFail <- time.Since(*at)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-s.release:
		}
	}
	for s.hang.Load() {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	if d := s.slowFail.Swap(0); d > 0 {
		time.Sleep(time.Duration(d))
		now := time.Now()
		s.failedAt.Store(&now)
		return nil, errors.New("connection reset")
	}
	s.answered.Add(1)
	return s.stats, nil
}

func newScriptedMonitor(t *testing.T) (*Server, *scriptedStats) {
	t.Helper()
	kr := testpki.Keyring(t)
	srv, err := New(Options{Keyring: kr, Protocols: protocol.Default(), Metrics: NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	st := &scriptedStats{stats: []storage.EndpointInboxStats{{EndpointID: "work", Pending: 1, OldestPendingAt: time.Now().Add(-time.Hour)}}}
	srv.SetStore(st)
	return srv, st
}

func healthIs(t *testing.T, s *Server) healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	resp, err := s.health.Check(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetStatus()
}

// waitHealth waits up to within for health to be want, and says whether it was.
func waitHealth(t *testing.T, s *Server, want healthpb.HealthCheckResponse_ServingStatus, within time.Duration) bool {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if healthIs(t, s) == want {
			return true
		}
	}
	return false
}

func oldestAge(s *Server) float64 {
	s.metrics.inboxMu.Lock()
	defer s.metrics.inboxMu.Unlock()
	g, err := s.metrics.inboxOldest.GetMetricWithLabelValues("work")
	if err != nil {
		return 0
	}
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		return 0
	}
	return m.GetGauge().GetValue()
}

// TestMonitorRecoversSoonAfterASlowFailure: a read that failed after a long wait (a hung
// connection that broke at last) says nothing of what a scan costs. The monitor must read
// again at its interval, not twenty times that wait later: meanwhile health stays NOT_SERVING
// and the gauges stay frozen although storage is back (in production, a read stuck until TCP
// gave up after 15 minutes paused the monitor for five hours).
func TestMonitorRecoversSoonAfterASlowFailure(t *testing.T) {
	srv, st := newScriptedMonitor(t)
	st.afterFail, st.release = make(chan time.Duration, 1), make(chan struct{})
	// A failed read of 500ms: the fault paused twenty times that, 10 s, far from both the 10ms
	// interval and the 3 s a loaded machine is allowed below.
	st.slowFail.Store(int64(500 * time.Millisecond))
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go srv.RunInboxMonitor(ctx, 10*time.Millisecond)
	// The next read is held until health is seen NOT_SERVING: at a 10 ms interval it would
	// otherwise end that state before a poller on a loaded machine looked.
	if !waitHealth(t, srv, healthpb.HealthCheckResponse_NOT_SERVING, 10*time.Second) {
		t.Fatal("health never NOT_SERVING after the failed read")
	}
	close(st.release)
	// The pause is measured by the store (failure to next read), not by a poller's deadline.
	select {
	case gap := <-st.afterFail:
		if gap > 3*time.Second {
			t.Fatalf("the monitor read again %v after the failed read (twenty times the failed read's length was the fault), want about its 10ms interval", gap)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the monitor never read again after the failed read")
	}
	if !waitHealth(t, srv, healthpb.HealthCheckResponse_SERVING, 10*time.Second) {
		t.Fatal("health still NOT_SERVING after the read that followed the failed one answered")
	}
}

// TestMonitorHandlesAHungReadAsFailed: a read that neither answers nor fails (a connection
// hanging without an error) is handled as failed once StaleInboxSnapshotRefreshes refresh
// periods have passed: health NOT_SERVING, and the oldest-pending age, the business-completion
// alarm, keeps growing rather than freezing at its last value. Once it answers, health is
// SERVING again.
func TestMonitorHandlesAHungReadAsFailed(t *testing.T) {
	srv, st := newScriptedMonitor(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const interval = 20 * time.Millisecond
	srv.RefreshInboxDepth(t.Context())
	before := oldestAge(srv)
	go srv.RunInboxMonitor(ctx, interval)
	// The monitor's own reads answer (beyond RefreshInboxDepth's): it knows how long a scan
	// takes. Waited for, not slept: a first read still under way when the hang begins gets a
	// minute (firstInboxReadStall) before it counts as failed.
	for deadline := time.Now().Add(10 * time.Second); st.answered.Load() < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the monitor's reads never answered")
		}
	}
	st.hang.Store(true)
	if !waitHealth(t, srv, healthpb.HealthCheckResponse_NOT_SERVING, 2*time.Second) {
		t.Fatal("health still SERVING while the inbox stats read hangs")
	}
	time.Sleep(10 * interval)
	if after := oldestAge(srv); after < before+float64(StaleInboxSnapshotRefreshes*interval)/float64(time.Second) {
		t.Errorf("oldest pending age %v while the read hangs, was %v before it: frozen", after, before)
	}
	st.hang.Store(false)
	if !waitHealth(t, srv, healthpb.HealthCheckResponse_SERVING, 2*time.Second) {
		t.Fatal("health not SERVING again once the read answers")
	}
}

// TestMonitorGivesItsFirstReadTime: before any read has answered, nothing says how long a scan
// takes, and a first one over a large backlog (a restart with a million pending rows) may take
// seconds: it must not turn health NOT_SERVING while storage is fine.
func TestMonitorGivesItsFirstReadTime(t *testing.T) {
	srv, st := newScriptedMonitor(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const interval = 20 * time.Millisecond
	st.hang.Store(true) // the first read takes a while
	go srv.RunInboxMonitor(ctx, interval)
	if waitHealth(t, srv, healthpb.HealthCheckResponse_NOT_SERVING, 20*StaleInboxSnapshotRefreshes*interval) {
		t.Fatal("health NOT_SERVING during the monitor's first read, though storage answers other calls")
	}
	st.hang.Store(false)
	if !waitHealth(t, srv, healthpb.HealthCheckResponse_SERVING, 2*time.Second) {
		t.Fatal("health not SERVING after the first read answered")
	}
}

// failingStats is a store whose inbox statistics never answer.
type failingStats struct{ storage.Store }

func (failingStats) InboxStats(context.Context) ([]storage.EndpointInboxStats, error) {
	return nil, errors.New("connection refused")
}

// TestMonitorLogsAnOutageOncePerInterval: the monitor reads every second, and each failed read
// was a WARN line, for as long as an outage lasted. Now one line per interval says so, with
// the count held back, and health still turns NOT_SERVING at the first failure.
func TestMonitorLogsAnOutageOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	srv, err := New(Options{Keyring: testpki.Keyring(t), Protocols: protocol.Default(), Metrics: NewMetrics(),
		Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetStore(failingStats{})
	for range 30 {
		if _, ok := srv.refreshInbox(t.Context(), time.Second, 0); ok {
			t.Fatal("a failed read answered")
		}
	}
	if got := strings.Count(buf.String(), "inbox stats unavailable"); got != 1 {
		t.Fatalf("30 failed reads logged %d lines:\n%s\nwant 1", got, buf.String())
	}
	if healthIs(t, srv) != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatal("health is not NOT_SERVING after failed reads")
	}
}
