// Package ratelog bounds how often a kind of event is logged: a flood of the same failure
// (failed TLS handshakes from a scanner or a misconfigured fleet) logs one line per interval,
// carrying how many were not logged since the last.
package ratelog

import (
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
}

// New returns a Limiter letting one event through per interval, reading the time from now.
func New(interval time.Duration, now func() time.Time) *Limiter {
	return &Limiter{interval: interval, now: now}
}

// Allow reports whether this event is to be logged and, if so, how many were held back since
// the last one that was.
func (l *Limiter) Allow() (ok bool, heldBack int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() && now.Sub(l.last) < l.interval {
		l.unlogged++
		return false, 0
	}
	heldBack = l.unlogged
	l.last, l.unlogged = now, 0
	return true, heldBack
}
