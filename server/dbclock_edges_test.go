package server

import (
	"testing"
	"time"
)

// TestAClockReadingFarBehindTheLastReplacesIt: a reading that disagrees with the last one by
// more than both may be off shows the last one wrong whichever way it disagrees. Behind it (the
// database's clock stepped back, or a failover to a node whose clock is behind) counts as much
// as ahead of it (the machine suspended): kept, the last reading had the server's clock a
// minute ahead of the database's, taking over leases a minute before they end, until a reading
// as exact as it came.
func TestAClockReadingFarBehindTheLastReplacesIt(t *testing.T) {
	local := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	offset := 7 * time.Second
	truth := func() time.Time { return local.Add(offset) }
	s := &Server{databaseClock: true, now: func() time.Time { return local }}
	reading := func(rtt time.Duration) timedStore {
		return timedStore{read: func() time.Time {
			at := truth()
			local = local.Add(rtt)
			return at.Add(rtt / 2)
		}}
	}
	sync := func(st timedStore) {
		t.Helper()
		if err := s.syncClock(t.Context(), st); err != nil {
			t.Fatal(err)
		}
	}
	check := func(what string, within time.Duration) {
		t.Helper()
		if d := s.clock().Sub(truth()); d > within || d < -within {
			t.Fatalf("%s: the server's clock is %s off the database's, want within %s", what, d, within)
		}
	}

	sync(reading(time.Millisecond))
	check("after a 1 ms reading", time.Millisecond)
	local = local.Add(10 * time.Second)
	offset -= time.Minute
	sync(reading(400 * time.Millisecond))
	check("after a reading a minute behind the last", 200*time.Millisecond)
}
