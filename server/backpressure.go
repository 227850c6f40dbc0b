package server

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/internal/budget"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
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

// firstInboxReadStall is how long the monitor's first read may run before it counts as
// failed, since no read has yet said how long a scan of this inbox takes.
const firstInboxReadStall = time.Minute

// defaultInboxMonitorInterval is the interval RefreshInboxDepth reads as: the one serve runs
// the monitor at.
const defaultInboxMonitorInterval = time.Second

// RunInboxMonitor refreshes the inbox depth used for backpressure, the inbox gauges and the
// storage part of gRPC health every interval, or less often when one scan takes longer than
// MaxInboxMonitorShare of the time, until ctx ends. Limits are checked against this snapshot,
// so they may be overshot by about one interval of traffic: that is the price of not reading
// the counts on every delivery.
//
// Only a read that answered paces the monitor by its length: a failed one measured a broken
// connection or a timeout, not the cost of a scan, and waiting twenty times that (hours after
// a read that hung until TCP gave up) would leave health NOT_SERVING and the gauges frozen
// long after storage is back. A read that has not answered within StaleInboxSnapshotRefreshes
// refresh periods counts as a failed one while it runs on (see watchRead).
func (s *Server) RunInboxMonitor(ctx context.Context, interval time.Duration) {
	var scan time.Duration // how long the last read that answered took
	answered := false
	for {
		stall := StaleInboxSnapshotRefreshes * (scan + monitorPause(interval, scan))
		if !answered {
			// Until a read has answered, nothing says how long a scan takes: a first one over
			// a large backlog (a restart with a million pending rows) may take seconds, and
			// must not turn health NOT_SERVING while storage is fine.
			stall = max(stall, firstInboxReadStall)
		}
		took, ok := s.refreshInbox(ctx, interval, stall)
		pause := monitorPause(interval, scan)
		if ok {
			scan, answered = took, true
			pause = monitorPause(interval, took)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
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
	s.refreshInbox(ctx, defaultInboxMonitorInterval, 0)
}

// refreshInbox is RefreshInboxDepth for a monitor reading every interval; it returns how long
// the read took and whether it answered. A read still running after stall (when above zero)
// is handled as failed meanwhile (watchRead).
func (s *Server) refreshInbox(ctx context.Context, interval, stall time.Duration) (took time.Duration, ok bool) {
	h := s.store.Load()
	if h == nil {
		return 0, false
	}
	start := time.Now()
	var stats []storage.EndpointInboxStats
	var err error
	if stall > 0 {
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			s.watchRead(h, stall, interval, stop)
		}()
		stats, err = h.InboxStats(ctx)
		close(stop)
		<-stopped // so that it cannot report NOT_SERVING after this read's answer
	} else {
		stats, err = h.InboxStats(ctx)
	}
	took = time.Since(start)
	now := s.clock()
	if err != nil {
		if ctx.Err() != nil {
			return took, false // the monitor is stopping, which says nothing of storage
		}
		if ok, heldBack := s.inboxStatsLog.Allow(); ok {
			s.log.WarnContext(ctx, "inbox stats unavailable", "err", err, "not_logged_since_last", heldBack)
		}
		s.inboxUnread(h, now)
		return took, false
	}
	period := took + monitorPause(interval, took)
	snap := &inboxSnapshot{
		stats:       stats,
		perEndpoint: make(map[string]int64, len(stats)),
		readAt:      now,
		applyUntil:  now.Add(StaleInboxSnapshotRefreshes * period),
	}
	for _, st := range stats {
		snap.perEndpoint[st.EndpointID] = st.Pending + st.Leased
		snap.total += st.Pending + st.Leased
	}
	if s.metrics != nil {
		s.metrics.setInboxStats(stats, now)
	}
	s.inboxSnap.Store(snap)
	s.setStorageAnswering(h, true)
	return took, true
}

// inboxUnread is what a read of the inbox statistics from h that failed at now does: health
// NOT_SERVING, the oldest-pending gauges aged from the last read (nothing can be acked
// meanwhile), and the snapshot dropped from the limits once too old.
func (s *Server) inboxUnread(h *storeHolder, now time.Time) {
	s.setStorageAnswering(h, false)
	if last := s.inboxSnap.Load(); last != nil {
		if s.metrics != nil {
			s.metrics.ageInbox(last.stats, now)
		}
		s.limitSnapshot(now) // logs when the snapshot has just become too old
	}
}

// watchRead handles a read of the inbox statistics from h that has not answered after stall
// (a connection that hangs without an error, which may last until TCP gives up, a quarter of
// an hour on Linux) as a failed one until stop closes: health NOT_SERVING and the
// oldest-pending gauges aged every interval. Otherwise a hung read would leave health SERVING
// and the business-completion alarm frozen at its last value for as long as it hangs.
func (s *Server) watchRead(h *storeHolder, stall, interval time.Duration, stop <-chan struct{}) {
	timer := time.NewTimer(stall)
	defer timer.Stop()
	select {
	case <-stop:
		return
	case <-timer.C:
	}
	s.log.Warn("inbox stats read has not answered; handled as failed until it does", "after", stall.String())
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		s.inboxUnread(h, s.clock())
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
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

// DefaultMaxVerifyBytesInFlight is the default of Options.MaxVerifyBytesInFlight: sixteen
// requests at the ceiling, or thousands of ordinary ones, held at once.
const DefaultMaxVerifyBytesInFlight = 512 << 20

// VerifyBytesRetryAfter is the retry hint of a Verify call refused because the server holds
// as many requests as it may: they go as soon as the database answers their claims, so the
// edge's client retries within its budget rather than sending the provider away for long.
const VerifyBytesRetryAfter = time.Second

// newByteBudget returns the bound of Options.MaxVerifyBytesInFlight: the default for zero,
// none (nil) for a negative value.
func newByteBudget(limit int64) *budget.Bytes {
	switch {
	case limit == 0:
		limit = DefaultMaxVerifyBytesInFlight
	case limit < 0:
		return nil
	}
	return budget.New(limit)
}

// boundVerifyBytes holds every Verify request to the server's byte budget from its arrival to
// its answer. Each call waiting for its claim holds its body: while the database is slow,
// edges keep forwarding what providers send, and without a bound the heap grew with the
// traffic times the stall (GitHub sends up to 25 MB a delivery) until the kernel killed the
// process, cutting every call in flight. Past the bound a call is answered at once with
// RESOURCE_EXHAUSTED and a retry hint (the edge's 503 with Retry-After), and its body is
// dropped. (The budget counts requests once decoded: gRPC reads a message before any
// interceptor, so the ones still arriving are bounded by the transport limits, per connection.)
func (s *Server) boundVerifyBytes(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	m, ok := req.(*hookverifyv1.VerifyRequest)
	if s.verifyBytes == nil || !ok || info.FullMethod != hookverifyv1.VerifierService_Verify_FullMethodName {
		return handler(ctx, req)
	}
	n := int64(proto.Size(m))
	if !s.verifyBytes.Take(n, 0) {
		s.metrics.observeVerifyBytesFull()
		st := status.New(codes.ResourceExhausted, fmt.Sprintf("server holds %s of requests at once, its limit: retry later", byteCount(s.verifyBytes.Limit())))
		if withHint, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(VerifyBytesRetryAfter)}); err == nil {
			st = withHint
		}
		return nil, st.Err()
	}
	defer s.verifyBytes.Give(n)
	return handler(ctx, req)
}

// byteCount writes n in MiB when it is a whole number of them, else in bytes: a bound under one
// MiB (or between two) counted in whole MiB would read as another.
func byteCount(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
