package ratelog_test

import (
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
