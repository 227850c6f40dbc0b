package server

import (
	"context"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// Retention configures the sweeper.
type Retention struct {
	// DedupeWindow is how long claims are kept: a redelivery within it is a duplicate. It must
	// outlast every provider's retry window (Stripe retries for 3 days). Default 30 days.
	DedupeWindow time.Duration
	// AckedRetention is how long acked inbox records are kept. Default 7 days.
	AckedRetention time.Duration
	// Interval between sweeps. Default 1 minute.
	Interval time.Duration
	// Batch is the most rows one statement deletes. Default 500.
	Batch int
}

func (r Retention) withDefaults() Retention {
	if r.DedupeWindow <= 0 {
		r.DedupeWindow = 30 * 24 * time.Hour
	}
	if r.AckedRetention <= 0 {
		r.AckedRetention = 7 * 24 * time.Hour
	}
	if r.Interval <= 0 {
		r.Interval = time.Minute
	}
	if r.Batch <= 0 {
		r.Batch = 500
	}
	return r
}

// exhaustedCheckInterval is how often a running server moves pending deliveries with no
// attempts left under its MaxAttempts to the dead letters (DeadLetterExhausted), besides once
// at start. In a rolling deploy that lowers --max-attempts, a server still on the higher
// limit can nack a delivery back to pending after the new ones started; once it is gone, no
// server would lease that delivery, and it would wait for the next restart. The check reads
// every pending delivery, hence not at every sweep.
const exhaustedCheckInterval = time.Hour

// fullClaimsSweepInterval is how often the sweeper reaches back to the oldest claims. In
// between, a sweep reads only the claims that passed the dedupe window since the last complete
// sweep (storage.SweepRequest.ClaimsFrom), not again each one kept past it because its
// delivery was not acked (dead letters, above all): such a claim goes at most this long after
// its delivery is acked or discarded.
const fullClaimsSweepInterval = time.Hour

// RunRetention sweeps on every interval until ctx ends, dead-letters the expired last leases
// no lease has taken (deadLetterExpiredLeases) at every sweep, and runs DeadLetterExhausted
// every exhaustedCheckInterval. The expired leases are checked at every sweep, not hourly:
// the check reads only leased deliveries, and a delivery it moves has had no worker since its
// lease ran out, which the operator should see as a dead letter as soon as it can be. Several
// instances may sweep at once: each batch is its own statement, and deleting an already
// deleted row is a no-op.
func (s *Server) RunRetention(ctx context.Context, r Retention) {
	r = r.withDefaults()
	ticker := time.NewTicker(r.Interval)
	defer ticker.Stop()
	lastExhaustedCheck := s.clock() // serve ran it before starting this loop
	// claimsFrom is the ClaimsBefore of the last complete sweep: the claims before it were
	// read then. Zero reaches back to the oldest, as the first sweep does.
	var claimsFrom, lastFullSweep time.Time
	for {
		// As below, a clock that stepped back makes a full sweep due at once. The sweep is timed
		// by the same reading: with a reading of its own, a sweep could be past the hour while
		// this one was not, and reach back only an iteration later.
		now := s.clock()
		if now.Sub(lastFullSweep) >= fullClaimsSweepInterval || now.Before(lastFullSweep) {
			claimsFrom, lastFullSweep = time.Time{}, now
		}
		if _, swept, err := s.sweep(ctx, r, claimsFrom, now); err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "retention sweep failed; will retry", "err", err)
			}
			// The next sweep reads the same claims again, and more.
		} else {
			claimsFrom = swept
		}
		// A clock that stepped back (now before the last check) makes the check due at once:
		// timed by the clock alone, it waited until the clock passed the last check's time
		// again, as long as the step, with the deliveries it moves pending for nobody.
		if now := s.clock(); now.Sub(lastExhaustedCheck) >= exhaustedCheckInterval || now.Before(lastExhaustedCheck) {
			if ib, err := s.inbox(); err == nil {
				if _, err := s.DeadLetterExhausted(ctx, ib); err != nil && ctx.Err() == nil {
					s.log.WarnContext(ctx, "dead-lettering exhausted deliveries failed; will retry", "err", err)
				} else {
					lastExhaustedCheck = now
				}
			}
		} else if ib, err := s.inbox(); err == nil {
			// DeadLetterExhausted, above, does this first.
			if _, err := s.deadLetterExpiredLeases(ctx, ib); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "dead-lettering expired last leases failed; will retry", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// SweepOnce deletes, batch by batch, everything older than the retention allows and returns
// the totals.
func (s *Server) SweepOnce(ctx context.Context, r Retention) (storage.SweepResult, error) {
	total, _, err := s.sweep(ctx, r, time.Time{}, s.clock())
	return total, err
}

// sweep is SweepOnce at now for the claims first received at or after claimsFrom only (all of
// them when it is zero), and also returns the ClaimsBefore it swept to.
func (s *Server) sweep(ctx context.Context, r Retention, claimsFrom, now time.Time) (storage.SweepResult, time.Time, error) {
	r = r.withDefaults()
	st, err := s.storage()
	if err != nil {
		return storage.SweepResult{}, time.Time{}, err
	}
	rs, ok := st.(storage.RetentionStore)
	if !ok {
		return storage.SweepResult{}, time.Time{}, nil
	}
	// Claims this instance remembers must not outlive the ones the sweep deletes.
	s.claims.sweptAfter(r.DedupeWindow)
	req := storage.SweepRequest{AckedBefore: now.Add(-r.AckedRetention), ClaimsBefore: now.Add(-r.DedupeWindow),
		ClaimsFrom: claimsFrom, Batch: r.Batch}
	var total storage.SweepResult
	for ctx.Err() == nil {
		res, err := rs.Sweep(ctx, req)
		if err != nil {
			return total, time.Time{}, err
		}
		s.metrics.observeSweep(res)
		total.InboxDeleted += res.InboxDeleted
		total.ClaimsDeleted += res.ClaimsDeleted
		if res.InboxDeleted < int64(r.Batch) && res.ClaimsDeleted < int64(r.Batch) {
			break
		}
	}
	if total.InboxDeleted+total.ClaimsDeleted > 0 {
		s.log.InfoContext(ctx, "retention sweep", "inbox_deleted", total.InboxDeleted, "claims_deleted", total.ClaimsDeleted)
	}
	return total, req.ClaimsBefore, ctx.Err()
}
