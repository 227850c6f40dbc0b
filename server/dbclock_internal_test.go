package server

import (
	"context"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// timedStore is a store whose database clock reads as read says, the call taking as long as
// read moves the machine's clock on. Only DatabaseTime is called.
type timedStore struct {
	storage.Store
	read func() time.Time
}

func (s timedStore) DatabaseTime(context.Context) (time.Time, error) { return s.read(), nil }

// TestASlowClockReadingDoesNotMoveTheClock: a reading of the database's clock is only as
// exact as half its round trip (storage/crdb's DatabaseTime adds half of it, not knowing
// which way the time went). One slow reply, 3 s behind a database under load, put the
// instance's clock 1.5 s off the database's for the next 10 s, where a reading a millisecond
// long had had it right: an instance 1.5 s ahead takes over a lease 1.5 s before its worker
// stops, the delivery running on two workers meanwhile, which timing by the database's clock
// is there to prevent. A reading is kept only if it is no less exact than the one it replaces,
// or shows that one wrong, whichever way it disagrees (the machine suspended in between,
// which its monotonic clock does not count; the database's clock stepped back).
func TestASlowClockReadingDoesNotMoveTheClock(t *testing.T) {
	local := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	offset := -31 * time.Second // the database's clock is this far from the machine's
	truth := func() time.Time { return local.Add(offset) }
	s := &Server{databaseClock: true, now: func() time.Time { return local }}
	check := func(what string, within time.Duration) {
		t.Helper()
		if d := s.clock().Sub(truth()); d > within || d < -within {
			t.Fatalf("%s: the server's clock is %s off the database's, want within %s", what, d, within)
		}
	}
	// The reply came back after rtt, the database having read its clock after ahead of it.
	reading := func(rtt, ahead time.Duration) timedStore {
		return timedStore{read: func() time.Time {
			at := truth().Add(ahead)
			local = local.Add(rtt)
			return at.Add(rtt / 2) // as storage/crdb's DatabaseTime corrects it
		}}
	}
	sync := func(st timedStore) {
		t.Helper()
		if err := s.syncClock(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}

	sync(reading(2*time.Millisecond, time.Millisecond))
	check("after a 2 ms reading", 2*time.Millisecond)
	local = local.Add(10 * time.Second)
	// The request went at once, the reply waited 3 s: half of it is counted wrong.
	sync(reading(3*time.Second, 0))
	check("after a reading whose reply took 3 s", 5*time.Millisecond)

	// A later exact reading is taken, though it moves the clock by only a little.
	local = local.Add(10 * time.Second)
	offset += 3 * time.Millisecond
	sync(reading(time.Millisecond, 500*time.Microsecond))
	check("after a 1 ms reading", time.Millisecond)

	// The machine was suspended for a minute: its monotonic clock did not count it, and the
	// first reading after, slow as it may be, puts the clock right to within its round trip.
	local = local.Add(10 * time.Second)
	offset += time.Minute
	sync(reading(400*time.Millisecond, 0))
	check("after a suspension", 200*time.Millisecond)

	// The database's clock stepped back a minute (or a failover reached a node whose clock is
	// behind): a reading that far behind an exact one shows it wrong as much as one ahead does,
	// though it is less exact. Kept, the exact one had the server's clock a minute ahead of the
	// database's, taking over leases a minute before they end.
	local = local.Add(10 * time.Second)
	sync(reading(time.Millisecond, 0))
	check("after another 1 ms reading", time.Millisecond)
	local = local.Add(10 * time.Second)
	offset -= time.Minute
	sync(reading(400*time.Millisecond, 0))
	check("after a reading a minute behind the last", 200*time.Millisecond)
}
