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
	// heldBack, when set, is told at the end of an interval the events held back in it that no
	// later event has carried; flushDue is set while its timer runs.
	heldBack func(count int)
	flushDue bool
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

// OnHeldBack makes the limiter call report, once the interval after a logged event is over,
// with how many events it held back in it, unless an event let through since has carried
// that count. Without it, the count of a flood's end would wait for the next event, which
// may never come: the last line logged would say the flood was smaller than it was. report
// runs on its own goroutine, and counts as a line logged: the next event within an interval
// of it is held back in turn. Call before the first Allow.
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
			l.flushDue = true
			time.AfterFunc(l.interval-now.Sub(l.last), l.flush)
		}
		return false, 0
	}
	heldBack = l.unlogged
	l.last, l.unlogged = now, 0
	return true, heldBack
}

// flush reports the events held back that no event let through has carried since.
func (l *Limiter) flush() {
	l.mu.Lock()
	l.flushDue = false
	count := l.unlogged
	if count == 0 {
		l.mu.Unlock()
		return
	}
	l.last, l.unlogged = l.now(), 0
	report := l.heldBack
	l.mu.Unlock()
	report(count)
}
