package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/storage"
)

// BackpressureRetryAfter is the retry hint sent with RESOURCE_EXHAUSTED; edges turn it into
// 503 with Retry-After so the provider comes back later and nothing is lost.
const BackpressureRetryAfter = 30 * time.Second

// inboxSnapshot is what one successful read of the inbox statistics found. The inbox gauges are
// set from it, and the inbox limits are checked against it until it is too old to say anything
// of the inbox (applyUntil).
type inboxSnapshot struct {
	stats []storage.EndpointInboxStats
	// perEndpoint and total count unfinished (pending plus leased) deliveries.
	perEndpoint map[string]int64
	total       int64
	// readAt is when the statistics were read, by the server's clock.
	readAt time.Time
	// applyUntil is when the limits stop being checked against this snapshot: readAt plus
	// StaleInboxSnapshotRefreshes refresh periods.
	applyUntil time.Time
	// dropped is set when the snapshot is first found too old, so that this is logged once.
	dropped atomic.Bool
}

// MaxInboxMonitorShare bounds the time the inbox monitor spends scanning: after a scan that
// took d it waits at least d/MaxInboxMonitorShare - d, so a large inbox (whose count, where the
// store counts rows at each scan, grows with every unfinished delivery) cannot turn the monitor
// into the server's main database load. (The SQLite store keeps its pending counts as it
// writes; PostgreSQL counts at each scan.)
const MaxInboxMonitorShare = 0.05

// StaleInboxSnapshotRefreshes bounds how long the inbox limits are checked against one
// snapshot: for this many refresh periods of the monitor after it was read (a period is the
// monitor's interval, or longer after a slow scan: see MaxInboxMonitorShare), so 5 s at the
// 1 s interval serve uses. By then that many reads in a row have failed and the snapshot no
// longer says what the inbox holds: refusing new events by it could go on for as long as the
// statistics cannot be read, long after workers have drained the inbox. No limit is applied
// then (logged) until a read succeeds again.
const StaleInboxSnapshotRefreshes = 5

// defaultInboxMonitorInterval is the interval RefreshInboxDepth reads as: the one serve runs
// the monitor at.
const defaultInboxMonitorInterval = time.Second

// RunInboxMonitor refreshes the inbox depth used for backpressure, the inbox gauges and the
// storage part of gRPC health every interval, or less often when one scan takes longer than
// MaxInboxMonitorShare of the time, until ctx ends. Limits are checked against this snapshot,
// so they may be overshot by about one interval of traffic: that is the price of not reading
// the counts on every delivery.
func (s *Server) RunInboxMonitor(ctx context.Context, interval time.Duration) {
	for {
		took := s.refreshInbox(ctx, interval)
		select {
		case <-ctx.Done():
			return
		case <-time.After(monitorPause(interval, took)):
		}
	}
}

// monitorPause is how long the monitor waits after a scan that took took: until interval has
// passed since the scan began, or longer so that scanning is at most MaxInboxMonitorShare of
// the time.
func monitorPause(interval, took time.Duration) time.Duration {
	return max(interval, time.Duration(float64(took)/MaxInboxMonitorShare)) - took
}

// RefreshInboxDepth reads the inbox statistics once. On success it sets the inbox gauges and
// the snapshot the inbox limits are checked against, and reports SERVING in gRPC health if
// the last read had failed. On failure it reports NOT_SERVING (see setStorageAnswering),
// keeps the last counts, but ages the oldest-pending gauge from the last read, since nothing
// can be acked meanwhile, and drops the snapshot from the limits once it is too old (see
// StaleInboxSnapshotRefreshes). Before SetStore, and after SetStore(nil), it does nothing.
// It reads as the monitor does at defaultInboxMonitorInterval.
func (s *Server) RefreshInboxDepth(ctx context.Context) {
	s.refreshInbox(ctx, defaultInboxMonitorInterval)
}

// refreshInbox is RefreshInboxDepth for a monitor reading every interval; it returns how long
// the read took.
func (s *Server) refreshInbox(ctx context.Context, interval time.Duration) (took time.Duration) {
	h := s.store.Load()
	if h == nil {
		return 0
	}
	start := time.Now()
	stats, err := h.InboxStats(ctx)
	took = time.Since(start)
	now := s.clock()
	if err != nil {
		if ctx.Err() != nil {
			return took // the monitor is stopping, which says nothing of storage
		}
		s.log.WarnContext(ctx, "inbox stats unavailable", "err", err)
		s.setStorageAnswering(h, false)
		if last := s.inboxSnap.Load(); last != nil {
			if s.metrics != nil {
				for _, st := range last.stats {
					s.metrics.inboxOldest.WithLabelValues(st.EndpointID).Set(waitingAge(st, now))
				}
			}
			s.limitSnapshot(now) // logs when the snapshot has just become too old
		}
		return took
	}
	period := took + monitorPause(interval, took)
	snap := &inboxSnapshot{
		stats:       stats,
		perEndpoint: make(map[string]int64, len(stats)),
		readAt:      now,
		applyUntil:  now.Add(StaleInboxSnapshotRefreshes * period),
	}
	if s.metrics != nil {
		s.metrics.inboxPending.Reset()
		s.metrics.inboxLeased.Reset()
		s.metrics.inboxDead.Reset()
		s.metrics.inboxOldest.Reset()
	}
	for _, st := range stats {
		snap.perEndpoint[st.EndpointID] = st.Pending + st.Leased
		snap.total += st.Pending + st.Leased
		if s.metrics != nil {
			s.metrics.inboxPending.WithLabelValues(st.EndpointID).Set(float64(st.Pending))
			s.metrics.inboxLeased.WithLabelValues(st.EndpointID).Set(float64(st.Leased))
			s.metrics.inboxDead.WithLabelValues(st.EndpointID).Set(float64(st.Dead))
			s.metrics.inboxOldest.WithLabelValues(st.EndpointID).Set(waitingAge(st, now))
		}
	}
	if s.metrics != nil {
		s.metrics.inboxStatsAt.Set(float64(now.UnixMicro()) / 1e6)
	}
	s.inboxSnap.Store(snap)
	s.setStorageAnswering(h, true)
	return took
}

// waitingAge is how long, at now, the endpoint's delivery waiting longest for a worker has
// waited, in seconds: since the oldest pending delivery became visible, or since a lease that
// has run out ended, whichever is earlier. An expired lease keeps its delivery leased until a
// next lease takes it over, and with no worker left none does: counted as leased only, the
// delivery would wait unseen.
func waitingAge(st storage.EndpointInboxStats, now time.Time) float64 {
	since := st.OldestPendingAt
	if end := st.EarliestLeaseEnd; !end.IsZero() && !end.After(now) && (since.IsZero() || end.Before(since)) {
		since = end
	}
	if since.IsZero() {
		return 0
	}
	return max(now.Sub(since), 0).Seconds()
}

// limitSnapshot returns the snapshot to check the inbox limits against at now: the last one
// read, or nil when there is none, no limit is set, or it is too old (see
// StaleInboxSnapshotRefreshes; logged once per snapshot).
func (s *Server) limitSnapshot(now time.Time) *inboxSnapshot {
	if s.maxPendingPerEndpoint <= 0 && s.maxPendingTotal <= 0 {
		return nil
	}
	snap := s.inboxSnap.Load()
	if snap == nil || !now.After(snap.applyUntil) {
		return snap
	}
	if snap.dropped.CompareAndSwap(false, true) {
		s.log.Warn("inbox limits not applied until the inbox stats are read again: the last read is too old",
			"read_at", snap.readAt, "bound", snap.applyUntil.Sub(snap.readAt).String())
	}
	return nil
}

// overLimit says which inbox limit, if any, a new delivery for the endpoint would break at now.
func (s *Server) overLimit(endpointID string, now time.Time) string {
	snap := s.limitSnapshot(now)
	if snap == nil {
		return ""
	}
	if s.maxPendingPerEndpoint > 0 && snap.perEndpoint[endpointID] >= s.maxPendingPerEndpoint {
		return fmt.Sprintf("endpoint inbox holds %d unfinished deliveries (limit %d)", snap.perEndpoint[endpointID], s.maxPendingPerEndpoint)
	}
	if s.maxPendingTotal > 0 && snap.total >= s.maxPendingTotal {
		return fmt.Sprintf("inbox holds %d unfinished deliveries (limit %d)", snap.total, s.maxPendingTotal)
	}
	return ""
}

// backpressure answers a new event while an inbox limit is reached: RESOURCE_EXHAUSTED with a
// retry hint. (Repeats of accepted events never get here: Verify answers them DUPLICATE first.)
func (s *Server) backpressure(endpointID, why string) error {
	if s.metrics != nil {
		s.metrics.backpressure.WithLabelValues(endpointID).Inc()
	}
	st := status.New(codes.ResourceExhausted, "inbox full, retry later: "+why)
	if withHint, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(BackpressureRetryAfter)}); err == nil {
		st = withHint
	}
	return st.Err()
}
