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
	l := ratelog.New(interval, time.Now)
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
	// The report carried the count: an event after it is let through with none held back.
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
