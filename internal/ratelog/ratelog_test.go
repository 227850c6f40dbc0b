package ratelog_test

import (
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/ratelog"
)

// TestOnePerInterval: the first event is let through, the others within the interval are held
// back and counted, and the first after it is let through with that count.
func TestOnePerInterval(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := ratelog.New(10*time.Second, func() time.Time { return now })
	if ok, held := l.Allow(); !ok || held != 0 {
		t.Fatalf("first event: %v, %d held back", ok, held)
	}
	for range 3 {
		now = now.Add(time.Second)
		if ok, _ := l.Allow(); ok {
			t.Fatal("an event within the interval was let through")
		}
	}
	now = now.Add(7 * time.Second)
	if ok, held := l.Allow(); !ok || held != 3 {
		t.Fatalf("first event after the interval: %v, %d held back; want true, 3", ok, held)
	}
	if ok, _ := l.Allow(); ok {
		t.Fatal("the interval did not start again")
	}
}

// TestHeldBackReportedAtTheEnd: a flood's last events, held back with no event after them to
// carry their count, are reported once the interval is over, and only once.
func TestHeldBackReportedAtTheEnd(t *testing.T) {
	const interval = 50 * time.Millisecond
	// The limiter's clock stands still until the test moves it: on a loaded machine the real
	// one could pass an interval between two of the flood's events. Its timers stay real.
	var (
		clockMu sync.Mutex
		now     = time.Now()
	)
	clock := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return now
	}
	l := ratelog.New(interval, clock)
	reports := make(chan int, 4)
	l.OnHeldBack(func(count int) { reports <- count })
	if ok, _ := l.Allow(); !ok {
		t.Fatal("first event held back")
	}
	for range 3 {
		if ok, _ := l.Allow(); ok {
			t.Fatal("an event within the interval was let through")
		}
	}
	select {
	case n := <-reports:
		if n != 3 {
			t.Fatalf("reported %d held back, want 3", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the events held back at the end of the flood were never reported")
	}
	// The report carried the count: an event after it (the report comes two intervals after
	// the last event let through) is let through with none held back.
	clockMu.Lock()
	now = now.Add(2 * interval)
	clockMu.Unlock()
	if ok, held := l.Allow(); !ok || held != 0 {
		t.Fatalf("an event after the report: %v, %d held back; want true, 0", ok, held)
	}

	select {
	case n := <-reports:
		t.Fatalf("reported %d more, with nothing held back", n)
	case <-time.After(3 * interval):
	}
}

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
	// The limiter reads the time each event was sent at (set just before its Allow), so that
	// which events are let through follows from those times even on a loaded machine, where
	// sleeps overrun and events bunch; the end-of-flood timers stay real, racing the events.
	var (
		mu       sync.Mutex
		sentAt   time.Time
		reported int
	)
	l := ratelog.New(interval, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return sentAt
	})
	l.OnHeldBack(func(count int) {
		mu.Lock()
		reported += count
		mu.Unlock()
	})
	let, carried, want := 0, 0, 0
	var lastLet time.Time
	start := time.Now()
	for k := range events {
		time.Sleep(time.Until(start.Add(time.Duration(k) * spacing)))
		at := time.Now()
		mu.Lock()
		sentAt = at
		mu.Unlock()
		// One per interval: an event at least an interval after the last one let through.
		if lastLet.IsZero() || at.Sub(lastLet) >= interval {
			want, lastLet = want+1, at
		}
		if ok, held := l.Allow(); ok {
			let++
			carried += held
		}
	}
	// Nine intervals of flood (on an idle machine; fewer when sleeps overran): a line in
	// each, not only the first.
	if let != want {
		t.Fatalf("%d events let through in a flood that spans %d intervals, want one per interval", let, want)
	}
	// The tail count comes by a timer at most two intervals after the last event let through;
	// waited for, as a loaded machine may run it late.
	total := func() int {
		mu.Lock()
		defer mu.Unlock()
		return let + carried + reported
	}
	for deadline := time.Now().Add(10 * time.Second); total() < events && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	time.Sleep(3 * interval) // time for a report counted twice to arrive as well
	mu.Lock()
	defer mu.Unlock()
	if got := let + carried + reported; got != events {
		t.Fatalf("%d let through + %d carried + %d reported = %d, want the %d events", let, carried, reported, got, events)
	}
}
