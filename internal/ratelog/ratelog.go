// Package ratelog bounds how often a kind of event is logged: a flood of the same failure
// (failed TLS handshakes from a scanner or a misconfigured fleet) logs one line per interval,
// carrying how many were not logged since the last.
package ratelog

import (
	"log/slog"
	"sync"
	"time"
)

// Limiter says which events of one kind to log. The zero value is not usable: use New.
type Limiter struct {
	interval time.Duration
	now      func() time.Time

	mu sync.Mutex
	// last is when an event was last let through; unlogged counts those held back since.
	last     time.Time
	unlogged int
	// heldBack, when set, is told the events held back that no later event has carried, once
	// an interval has passed after theirs with no event let through; flushDue is set while its
	// timer runs, which was set for the interval after the one starting at flushAfter.
	heldBack   func(count int)
	flushDue   bool
	flushAfter time.Time
}

// New returns a Limiter letting one event through per interval, reading the time from now.
func New(interval time.Duration, now func() time.Time) *Limiter {
	return &Limiter{interval: interval, now: now}
}

// ForLog returns a Limiter for lines logged at most once per interval by log, whose count of
// lines held back at the end of a flood is logged at WARN on its own, as "<what> (not logged
// one by one)", what saying what they were.
func ForLog(log *slog.Logger, interval time.Duration, what string) *Limiter {
	l := New(interval, time.Now)
	l.OnHeldBack(func(count int) { log.Warn(what+" (not logged one by one)", "count", count) })
	return l
}

// OnHeldBack makes the limiter call report with how many events it held back after a logged
// event when no event has carried that count an interval after it could have: once two
// intervals have passed since the logged event with none let through. Without it, the count
// of a flood's end would wait for the next event, which may never come: the last line logged
// would say the flood was smaller than it was. While the flood goes on, its next event after
// the interval is let through and carries the count, as without report: reporting at the
// interval's end instead, and counting that as the interval's line, held back every event
// after the flood's first for as long as it lasted, and with them the detail their lines
// carry (which caller, what failed). report runs on its own goroutine. Call before the first
// Allow.
func (l *Limiter) OnHeldBack(report func(count int)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.heldBack = report
}

// Allow reports whether this event is to be logged and, if so, how many were held back since
// the last one that was.
func (l *Limiter) Allow() (ok bool, heldBack int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.unlogged++
		if l.heldBack != nil && !l.flushDue {
			l.flushDue, l.flushAfter = true, l.last
			time.AfterFunc(2*l.interval-now.Sub(l.last), l.flush)
		}
		return false, 0
	}
	heldBack = l.unlogged
	l.last, l.unlogged = now, 0
	return true, heldBack
}

// flush reports the events held back that no event let through has carried since. If one was
// let through after the timer was set, it carried the count of those before it, and the
// events held back since it are reported, if need be, an interval after its own interval.
func (l *Limiter) flush() {
	l.mu.Lock()
	count := l.unlogged
	if count > 0 && !l.last.Equal(l.flushAfter) {
		l.flushAfter = l.last
		time.AfterFunc(2*l.interval-l.now().Sub(l.last), l.flush)
		l.mu.Unlock()
		return
	}
	l.flushDue = false
	if count == 0 {
		l.mu.Unlock()
		return
	}
	// last stays: the next event, an interval or more after it, is let through.
	l.unlogged = 0
	report := l.heldBack
	l.mu.Unlock()
	report(count)
}
