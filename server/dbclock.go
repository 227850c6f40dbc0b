package server

import (
	"context"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// Several instances on one database compare times that others wrote: a lease's end, written
// by the instance that leased or extended it, is compared by the instance of the next lease,
// and so are the times deliveries become due. Each instance reading its own wall clock, one
// 31 s ahead took over a 30 s lease the moment another gave it, and one 31 s behind gave
// leases that had already ended: the delivery ran on two workers at once. With
// Options.DatabaseClock the server's clock is the database's instead (storage/crdb's
// DatabaseTime), read when the store is set and every clockSyncInterval after, and moved on
// in between by the time Options.Now says has passed (monotonic with time.Now, so that a step
// of the machine's wall clock, NTP setting it, does not move it either).

// clockSyncInterval is how often RunClockSync reads the database's clock again. In between,
// the server's clock drifts from it only as the machine's runs fast or slow, except across a
// suspension of the machine (a paused VM), which the monotonic clock does not count: the
// reading after it, at most this long after the resumption, puts the clock right. One
// statement every 10 s is nothing beside the inbox monitor's reads, one a second.
const clockSyncInterval = 10 * time.Second

// clockSyncTimeout bounds one reading of the database's clock.
const clockSyncTimeout = 5 * time.Second

// databaseTimer is a store that reads its database's clock (storage/crdb).
type databaseTimer interface {
	DatabaseTime(ctx context.Context) (time.Time, error)
}

// clockAnchor pairs a reading of the database's clock with s.now() read at the same moment.
type clockAnchor struct {
	db, local time.Time
	// within bounds how far db may be off the database's clock at local: half the reading's
	// round trip, as the server timed it (the database read its clock some time during it).
	within time.Duration
}

// maxClockDrift is how fast the machine's monotonic clock may run fast or slow against the
// database's, as a ratio (500 ppm, beyond any quartz oscillator's): an older reading is
// trusted that much less for each second since.
const maxClockDrift = 500e-6

// withinAt bounds how far the reading may be off the database's clock at local.
func (a *clockAnchor) withinAt(local time.Time) time.Duration {
	return a.within + time.Duration(float64(local.Sub(a.local))*maxClockDrift)
}

// replaces reports whether the reading a is to replace last: it is no less exact than last is
// by now, or the two disagree by more than both may be off, so that last is wrong (the machine
// was suspended since, which its monotonic clock does not count). A reading whose reply came
// slowly (a database under load) is otherwise dropped: taken, it moved the clock by up to half
// its round trip, 1.5 s off the database's for a 3 s one, from a reading a millisecond exact.
func (a *clockAnchor) replaces(last *clockAnchor) bool {
	lastWithin := last.withinAt(a.local)
	if a.within <= lastWithin {
		return true
	}
	apart := a.db.Sub(last.now(a.local))
	return apart > a.within+lastWithin || -apart > a.within+lastWithin
}

// now is the database's time when s.now() says local: the reading moved on by what has
// passed since.
func (a *clockAnchor) now(local time.Time) time.Time { return a.db.Add(local.Sub(a.local)) }

// syncClock reads the database's clock through st, when Options.DatabaseClock is set and st
// has one, and keeps the server's clock on it from then on.
func (s *Server) syncClock(ctx context.Context, st storage.Store) error {
	dt, ok := st.(databaseTimer)
	if !s.databaseClock || !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, clockSyncTimeout)
	defer cancel()
	start := s.now()
	db, err := dt.DatabaseTime(ctx)
	if err != nil {
		return err
	}
	local := s.now()
	reading := &clockAnchor{db: db, local: local, within: local.Sub(start) / 2}
	if last := s.anchor.Load(); last != nil && !reading.replaces(last) {
		return nil
	}
	s.anchor.Store(reading)
	return nil
}

// RunClockSync reads the database's clock every clockSyncInterval until ctx ends, when
// Options.DatabaseClock is set (SetStore read it first). A failed reading keeps the last one,
// as does one less exact than it (clockAnchor.replaces).
func (s *Server) RunClockSync(ctx context.Context) {
	if !s.databaseClock {
		return
	}
	ticker := time.NewTicker(clockSyncInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		if h := s.store.Load(); h != nil {
			if err := s.syncClock(ctx, h.Store); err != nil && ctx.Err() == nil {
				s.log.WarnContext(ctx, "cannot read the database's clock; keeping the last reading", "err", err)
			}
		}
	}
}
