package ratelog_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/ratelog"
)

// TestSustainedFloodLogsALinePerInterval: while a flood goes on, one event per interval is
// still let through (its line names the caller and the reason, which a count line does not),
// carrying the count held back before it; the end-of-flood report does not take its place.
// The flood's tail count is still reported once the flood ends, and nothing is counted twice.
func TestSustainedFloodLogsALinePerInterval(t *testing.T) {
	const (
		interval = 200 * time.Millisecond
		// Events 0.45 interval apart, on a fixed schedule: none falls near an interval's end,
		// where an event and a timer would race.
		spacing = interval * 45 / 100
		events  = 20
	)
	l := ratelog.New(interval, time.Now)
	var (
		mu       sync.Mutex
		reported int
	)
	l.OnHeldBack(func(count int) {
		mu.Lock()
		reported += count
		mu.Unlock()
	})
	let, carried := 0, 0
	start := time.Now()
	for k := range events {
		time.Sleep(time.Until(start.Add(time.Duration(k) * spacing)))
		if ok, held := l.Allow(); ok {
			let++
			carried += held
		}
	}
	// Nine intervals of flood: a line in about each, not only the first.
	if let < 5 {
		t.Fatalf("%d events let through in a flood of 9 intervals, want about one per interval", let)
	}
	time.Sleep(3 * interval)
	mu.Lock()
	defer mu.Unlock()
	if got := let + carried + reported; got != events {
		t.Fatalf("%d let through + %d carried + %d reported = %d, want the %d events", let, carried, reported, got, events)
	}
}
