package server

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// BackpressureRetryAfter is the retry hint sent with RESOURCE_EXHAUSTED; edges turn it into
// 503 with Retry-After so the provider comes back later and nothing is lost.
const BackpressureRetryAfter = 30 * time.Second

// inboxDepth is a snapshot of unfinished (pending plus leased) deliveries.
type inboxDepth struct {
	perEndpoint map[string]int64
	total       int64
}

// MaxInboxMonitorShare bounds the time the inbox monitor spends scanning: after a scan that
// took d it waits at least d/MaxInboxMonitorShare - d, so a large inbox (whose count, where the
// store counts rows at each scan, grows with every unfinished delivery) cannot turn the monitor
// into the server's main database load. (The SQLite store keeps its pending counts as it
// writes; PostgreSQL counts at each scan.)
const MaxInboxMonitorShare = 0.05

// RunInboxMonitor refreshes the inbox depth used for backpressure and the inbox gauges every
// interval, or less often when one scan takes longer than MaxInboxMonitorShare of the time,
// until ctx ends. Limits are checked against this snapshot, so they may be overshot by about
// one interval of traffic: that is the price of not reading the counts on every delivery.
func (s *Server) RunInboxMonitor(ctx context.Context, interval time.Duration) {
	for {
		start := time.Now()
		s.RefreshInboxDepth(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(monitorPause(interval, time.Since(start))):
		}
	}
}

// monitorPause is how long the monitor waits after a scan that took took: until interval has
// passed since the scan began, or longer so that scanning is at most MaxInboxMonitorShare of
// the time.
func monitorPause(interval, took time.Duration) time.Duration {
	return max(interval, time.Duration(float64(took)/MaxInboxMonitorShare)) - took
}

// RefreshInboxDepth reads the inbox statistics once; on failure it keeps the last snapshot.
func (s *Server) RefreshInboxDepth(ctx context.Context) {
	ib, err := s.inbox()
	if err != nil {
		return
	}
	stats, err := ib.InboxStats(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "inbox stats unavailable", "err", err)
		return
	}
	now := s.clock()
	depth := &inboxDepth{perEndpoint: make(map[string]int64, len(stats))}
	if s.metrics != nil {
		s.metrics.inboxPending.Reset()
		s.metrics.inboxLeased.Reset()
		s.metrics.inboxDead.Reset()
		s.metrics.inboxOldest.Reset()
	}
	for _, st := range stats {
		depth.perEndpoint[st.EndpointID] = st.Pending + st.Leased
		depth.total += st.Pending + st.Leased
		if s.metrics != nil {
			s.metrics.inboxPending.WithLabelValues(st.EndpointID).Set(float64(st.Pending))
			s.metrics.inboxLeased.WithLabelValues(st.EndpointID).Set(float64(st.Leased))
			s.metrics.inboxDead.WithLabelValues(st.EndpointID).Set(float64(st.Dead))
			age := 0.0
			if !st.OldestPendingAt.IsZero() {
				age = max(now.Sub(st.OldestPendingAt), 0).Seconds()
			}
			s.metrics.inboxOldest.WithLabelValues(st.EndpointID).Set(age)
		}
	}
	s.depth.Store(depth)
}

// overLimit says which inbox limit, if any, a new delivery for the endpoint would break.
func (s *Server) overLimit(endpointID string) string {
	depth := s.depth.Load()
	if depth == nil {
		return ""
	}
	if s.maxPendingPerEndpoint > 0 && depth.perEndpoint[endpointID] >= s.maxPendingPerEndpoint {
		return fmt.Sprintf("endpoint inbox holds %d unfinished deliveries (limit %d)", depth.perEndpoint[endpointID], s.maxPendingPerEndpoint)
	}
	if s.maxPendingTotal > 0 && depth.total >= s.maxPendingTotal {
		return fmt.Sprintf("inbox holds %d unfinished deliveries (limit %d)", depth.total, s.maxPendingTotal)
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
