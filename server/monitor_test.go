package server_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// The inbox monitor (RefreshInboxDepth) reads the inbox statistics and from them sets the inbox
// gauges, the snapshot backpressure checks limits against, and the storage part of gRPC health
// (TestHealthFollowsTheInboxMonitor). These tests call it directly, with the injected clock.

// statsOutage is a store whose InboxStats fails while down is set, as when storage stops
// answering, and works again once it is cleared; every other call goes to the real store.
type statsOutage struct {
	storage.Store
	down atomic.Bool
}

func (s *statsOutage) InboxStats(ctx context.Context) ([]storage.EndpointInboxStats, error) {
	if s.down.Load() {
		return nil, fmt.Errorf("inbox stats: %w", storage.ErrUnavailable)
	}
	return s.Store.InboxStats(ctx)
}

// newEnvWithStatsOutage makes an env on b whose server's store is a statsOutage over a fresh
// database.
func newEnvWithStatsOutage(t *testing.T, b backend, options func(*server.Options)) (*env, *statsOutage) {
	t.Helper()
	dsn := b.newDatabase(t)
	st := &statsOutage{Store: openStore(t, b, dsn)}
	e := newEnvOn(t, b, dsn, nil)
	e.options = options
	e.instance = e.start(t, st)
	e.store = st
	return e, st
}

// inboxGauge returns the value of the gauge series of name, with endpoint="endpoint" unless
// endpoint is empty, and whether the series exists.
func inboxGauge(t *testing.T, m *server.Metrics, name, endpoint string) (float64, bool) {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, series := range f.GetMetric() {
			if endpoint == "" && len(series.GetLabel()) == 0 {
				return series.GetGauge().GetValue(), true
			}
			for _, l := range series.GetLabel() {
				if l.GetName() == "endpoint" && l.GetValue() == endpoint {
					return series.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// wantGauge fails unless the gauge series exists and is within a second of want.
func wantGauge(t *testing.T, m *server.Metrics, name, endpoint string, want float64, what string) {
	t.Helper()
	got, ok := inboxGauge(t, m, name, endpoint)
	if !ok || got < want-1 || got > want+1 {
		t.Errorf("%s: %s{endpoint=%q} = %v (present %v), want %v", what, name, endpoint, got, ok, want)
	}
}

// TestOldestPendingAgeCountsExpiredLeases: a worker leases the only delivery of a quiet
// endpoint and dies. Once the lease runs out the delivery waits for a worker again, though it
// stays leased until a next lease takes it over, and with no worker left none does: the
// oldest-pending age, the business-completion alarm, counts it as waiting since its lease
// ended. A live lease does not count.
func TestOldestPendingAgeCountsExpiredLeases(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		e := newEnvWith(t, b, func(o *server.Options) { o.Metrics = metrics })
		secret, _ := e.setup(t, githubProvider, "quiet")
		e.accept(t, e.deliver(t, githubProvider, "quiet", "evt-leased", secret))
		if got := lease(t, e, 1, 30*time.Second); len(got) != 1 {
			t.Fatalf("leased %d, want 1", len(got))
		}
		const age = "hookverify_inbox_oldest_pending_age_seconds"

		e.clock.Advance(29 * time.Second)
		e.srv.RefreshInboxDepth(t.Context())
		wantGauge(t, metrics, age, "quiet", 0, "while the lease lasts")

		// The worker died with the lease; nobody leases again.
		e.clock.Advance(time.Hour)
		e.srv.RefreshInboxDepth(t.Context())
		wantGauge(t, metrics, age, "quiet", (time.Hour - time.Second).Seconds(), "an hour after the lease ran out")
		wantGauge(t, metrics, "hookverify_inbox_leased", "quiet", 1, "an hour after the lease ran out")
		// GetInboxStats says so too.
		stats, err := e.inbox.GetInboxStats(t.Context(), &hookverifyv1.GetInboxStatsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if eps := stats.GetEndpoints(); len(eps) != 1 || eps[0].GetOldestExpiredLeaseAge().AsDuration() != time.Hour-time.Second || eps[0].GetOldestPendingAge() != nil {
			t.Errorf("GetInboxStats an hour after the lease ran out: %v; want the expired lease's age, 59m59s, and no pending age", eps)
		}

		// A newer pending delivery does not hide the delivery waiting since its lease ran out.
		e.accept(t, e.deliver(t, githubProvider, "quiet", "evt-pending", secret))
		e.clock.Advance(time.Minute)
		e.srv.RefreshInboxDepth(t.Context())
		wantGauge(t, metrics, age, "quiet", (time.Hour + time.Minute - time.Second).Seconds(), "with a newer pending delivery")
		wantGauge(t, metrics, "hookverify_inbox_pending", "quiet", 1, "with a newer pending delivery")
	})
}

// TestInboxGaugesWhileStatsCannotBeRead: while storage does not answer nothing can be acked,
// so the oldest pending delivery keeps getting older: its gauge keeps growing from the last
// read, while hookverify_inbox_stats_last_success_timestamp_seconds stays at that read so
// that alerts can tell the gauges are stale. Once storage answers both follow it again.
func TestInboxGaugesWhileStatsCannotBeRead(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		metrics := server.NewMetrics()
		e, outage := newEnvWithStatsOutage(t, b, func(o *server.Options) { o.Metrics = metrics })
		const (
			age    = "hookverify_inbox_oldest_pending_age_seconds"
			readAt = "hookverify_inbox_stats_last_success_timestamp_seconds"
		)
		wantGauge(t, metrics, readAt, "", 0, "before the first read")
		acceptSome(t, e, "work", 1) // at epoch
		e.srv.RefreshInboxDepth(t.Context())
		read := e.clock.Now()
		wantGauge(t, metrics, age, "work", 1, "fresh delivery")
		wantGauge(t, metrics, readAt, "", float64(read.Unix()), "after a read")

		outage.down.Store(true)
		e.clock.Advance(time.Hour)
		e.srv.RefreshInboxDepth(t.Context())
		wantGauge(t, metrics, age, "work", (time.Hour + time.Second).Seconds(), "an hour into the outage")
		wantGauge(t, metrics, readAt, "", float64(read.Unix()), "an hour into the outage")
		wantGauge(t, metrics, "hookverify_inbox_pending", "work", 1, "an hour into the outage")

		outage.down.Store(false)
		e.clock.Advance(time.Minute)
		e.srv.RefreshInboxDepth(t.Context())
		wantGauge(t, metrics, age, "work", (time.Hour + time.Minute + time.Second).Seconds(), "after the outage")
		wantGauge(t, metrics, readAt, "", float64(e.clock.Now().Unix()), "after the outage")
	})
}

// TestInboxGaugesAgeWhileStoreIsClosed is the outage of TestInboxGaugesWhileStatsCannotBeRead
// with a real failure: the store itself is closed.
func TestInboxGaugesAgeWhileStoreIsClosed(t *testing.T) {
	t.Parallel()
	metrics := server.NewMetrics()
	e := newEnvWith(t, backends[0], func(o *server.Options) { o.Metrics = metrics })
	acceptSome(t, e, "work", 1)
	e.srv.RefreshInboxDepth(t.Context())
	if err := e.store.Close(); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	e.srv.RefreshInboxDepth(t.Context())
	wantGauge(t, metrics, "hookverify_inbox_oldest_pending_age_seconds", "work", (time.Hour + time.Second).Seconds(),
		"an hour after the store closed")
}

// TestBackpressureSnapshotExpires: limits are checked against the monitor's last snapshot, but
// only for server.StaleInboxSnapshotRefreshes refresh periods (1 s each by default): while the
// statistics cannot be read any longer, new events are no longer refused by a count that may
// have been drained meanwhile (the drop is logged), and once they can, limits apply again.
func TestBackpressureSnapshotExpires(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e, outage := newEnvWithStatsOutage(t, b, func(o *server.Options) { o.MaxPendingPerEndpoint = 2 })
		secret, _ := e.setup(t, githubProvider, "busy")
		e.accept(t, e.deliver(t, githubProvider, "busy", "evt-a", secret))
		e.accept(t, e.deliver(t, githubProvider, "busy", "evt-b", secret))
		e.srv.RefreshInboxDepth(t.Context())

		outage.down.Store(true)
		e.clock.Advance(server.StaleInboxSnapshotRefreshes*time.Second - time.Second)
		e.srv.RefreshInboxDepth(t.Context())
		_, err := e.call(t, e.deliver(t, githubProvider, "busy", "evt-c", secret))
		wantCode(t, err, codes.ResourceExhausted)
		const dropped = "inbox limits not applied until the inbox stats are read again"
		if bytes.Contains(e.logs.Bytes(), []byte(dropped)) {
			t.Fatalf("snapshot dropped within its bound; logs:\n%s", e.logs.Bytes())
		}

		e.clock.Advance(time.Hour)
		e.srv.RefreshInboxDepth(t.Context())
		if !bytes.Contains(e.logs.Bytes(), []byte(dropped)) {
			t.Errorf("no log of the dropped snapshot; logs:\n%s", e.logs.Bytes())
		}
		e.accept(t, e.deliver(t, githubProvider, "busy", "evt-c", secret))

		outage.down.Store(false)
		e.srv.RefreshInboxDepth(t.Context())
		_, err = e.call(t, e.deliver(t, githubProvider, "busy", "evt-d", secret))
		wantCode(t, err, codes.ResourceExhausted)
	})
}

// fixedStats is a store whose InboxStats answers stats; nothing else of it is called.
type fixedStats struct {
	storage.Store
	stats atomic.Pointer[[]storage.EndpointInboxStats]
}

func (f *fixedStats) InboxStats(context.Context) ([]storage.EndpointInboxStats, error) {
	return *f.stats.Load(), nil
}

// newMonitoredServer returns a server with metrics on a fixedStats store.
func newMonitoredServer(t *testing.T) (*server.Server, *server.Metrics, *fixedStats) {
	t.Helper()
	_, kr := mustKeyring(t)
	metrics := server.NewMetrics()
	srv, err := server.New(server.Options{Keyring: kr, Protocols: protocol.Default(), Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	st := &fixedStats{}
	srv.SetStore(st)
	return srv, metrics, st
}

// seriesCount counts the series of the metric family name in one scrape.
func seriesCount(t *testing.T, m *server.Metrics, name string) int {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Error(err)
		return 0
	}
	for _, f := range families {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}

// TestInboxGaugesStayWhileTheMonitorRefreshes: a scrape taken while the monitor writes a new
// read must see every endpoint's inbox gauges, old value or new. A series missing from one
// scrape is stale to Prometheus: it resets the `for` of an alert on the oldest pending age or
// on dead letters, which then never fires while scrapes keep landing in that gap.
func TestInboxGaugesStayWhileTheMonitorRefreshes(t *testing.T) {
	srv, metrics, st := newMonitoredServer(t)
	const endpoints = 3000
	stats := make([]storage.EndpointInboxStats, endpoints)
	for i := range stats {
		stats[i] = storage.EndpointInboxStats{EndpointID: fmt.Sprintf("ep-%05d", i), Pending: 1, Dead: 1,
			OldestPendingAt: time.Now().Add(-time.Hour)}
	}
	st.stats.Store(&stats)
	srv.RefreshInboxDepth(t.Context())

	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 50 {
			srv.RefreshInboxDepth(t.Context())
		}
		done.Store(true)
	}()
	missing := 0
	for !done.Load() {
		if n := seriesCount(t, metrics, "hookverify_inbox_dead"); n != endpoints {
			missing++
		}
	}
	wg.Wait()
	if missing > 0 {
		t.Errorf("%d scrapes during refreshes lacked some of the %d endpoints' inbox gauges", missing, endpoints)
	}
}

// TestInboxGaugesOfDrainedEndpointsGo: an endpoint with nothing left unacked drops out of the
// inbox gauges at the next read (no stale series), the others stay.
func TestInboxGaugesOfDrainedEndpointsGo(t *testing.T) {
	srv, metrics, st := newMonitoredServer(t)
	both := []storage.EndpointInboxStats{{EndpointID: "a", Pending: 2}, {EndpointID: "b", Dead: 1}}
	st.stats.Store(&both)
	srv.RefreshInboxDepth(t.Context())
	wantGauge(t, metrics, "hookverify_inbox_pending", "a", 2, "first read")
	wantGauge(t, metrics, "hookverify_inbox_dead", "b", 1, "first read")

	onlyB := []storage.EndpointInboxStats{{EndpointID: "b", Dead: 1}}
	st.stats.Store(&onlyB)
	srv.RefreshInboxDepth(t.Context())
	for _, name := range []string{"hookverify_inbox_pending", "hookverify_inbox_leased", "hookverify_inbox_dead", "hookverify_inbox_oldest_pending_age_seconds"} {
		if _, ok := inboxGauge(t, metrics, name, "a"); ok {
			t.Errorf("%s{endpoint=\"a\"} still exported after a drained", name)
		}
		wantGauge(t, metrics, name, "b", map[bool]float64{true: 1}[name == "hookverify_inbox_dead"], "b after a drained")
	}
}

// TestDeadLetteredCausesExportedFromStart: every cause of hookverify_inbox_dead_lettered_total
// is exported, at 0, before its first dead letter. Prometheus' increase() and rate() need a
// sample before the rise: a series that appears at 1, or at N when serve dead-letters the
// deliveries a lowered --max-attempts has spent, all at once at start, shows no increase, and
// the alert on dead letters by cause misses it.
func TestDeadLetteredCausesExportedFromStart(t *testing.T) {
	metrics := server.NewMetrics()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	causes := map[string]bool{}
	for _, f := range families {
		if f.GetName() != "hookverify_inbox_dead_lettered_total" {
			continue
		}
		for _, series := range f.GetMetric() {
			for _, l := range series.GetLabel() {
				if l.GetName() == "cause" && series.GetCounter().GetValue() == 0 {
					causes[l.GetValue()] = true
				}
			}
		}
	}
	for _, cause := range []string{"nack", "lease_expired", "max_attempts_lowered"} {
		if !causes[cause] {
			t.Errorf("hookverify_inbox_dead_lettered_total{cause=%q} not exported at 0 before any dead letter", cause)
		}
	}
}
