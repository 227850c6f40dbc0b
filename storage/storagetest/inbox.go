package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// inboxFixture returns a fresh store with endpoints ep-1, ep-2 and ep-3.
func inboxFixture(t *testing.T, h harness) storage.Store {
	t.Helper()
	s := claimStore(t, h)
	createEndpoint(t, s, newEndpoint("ep-3"))
	return s
}

// deliver claims a delivery to the endpoint in the scope, received at receivedAt; its event id
// is "evt-" + inboxID.
func deliver(t *testing.T, s storage.Store, endpointID, scope, inboxID string, receivedAt time.Time) storage.Delivery {
	t.Helper()
	d := newDelivery(endpointID, scope, "evt-"+inboxID, inboxID)
	d.ReceivedAt = receivedAt
	if r := claim(t, s, d); !r.Accepted {
		t.Fatalf("Claim %s: not accepted: %+v", inboxID, r)
	}
	return d
}

// leaseReq asks for up to max deliveries at now, leased for a minute under token, with at most
// three attempts.
func leaseReq(token string, now time.Time, max int) storage.LeaseRequest {
	return storage.LeaseRequest{Max: max, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: token, Now: now}
}

func lease(t *testing.T, s storage.Store, req storage.LeaseRequest) []storage.LeasedDelivery {
	t.Helper()
	return leaseResult(t, s, req).Deliveries
}

func leaseResult(t *testing.T, s storage.Store, req storage.LeaseRequest) storage.LeaseResult {
	t.Helper()
	got, err := s.Lease(t.Context(), req)
	must(t, err, "Lease "+req.LeaseToken)
	return got
}

func inboxIDs(list []storage.LeasedDelivery) []string {
	ids := make([]string, len(list))
	for i, d := range list {
		ids[i] = d.InboxID
	}
	return ids
}

func wantIDs(t *testing.T, got []storage.LeasedDelivery, what string, want ...string) {
	t.Helper()
	if ids := inboxIDs(got); !slices.Equal(ids, want) && !(len(ids) == 0 && len(want) == 0) {
		t.Fatalf("%s: got deliveries %q, want %q", what, ids, want)
	}
}

// leasedAs is the LeasedDelivery a Lease must return for d.
func leasedAs(d storage.Delivery, token string, attempts int, until, visibleAt time.Time, lastError string) storage.LeasedDelivery {
	return storage.LeasedDelivery{
		Delivery: d, State: storage.StateLeased, Attempts: attempts, LeaseToken: token,
		LeasedUntil: until, VisibleAt: visibleAt, LastError: lastError,
	}
}

func ack(t *testing.T, s storage.Store, inboxID, token string, now time.Time) {
	t.Helper()
	must(t, s.Ack(t.Context(), inboxID, token, now), "Ack "+inboxID)
}

func nack(t *testing.T, s storage.Store, inboxID, token string, retryAt time.Time, maxAttempts int, now time.Time) bool {
	t.Helper()
	dead, err := s.Nack(t.Context(), inboxID, token, retryAt, maxAttempts, "failed: "+token, now)
	must(t, err, "Nack "+inboxID)
	return dead
}

// extendTo extends the lease of inboxID under token, at now, to end at until, and returns
// ExtendLease's error.
func extendTo(t *testing.T, s storage.Store, inboxID, token string, until, now time.Time) error {
	_, err := s.ExtendLease(t.Context(), storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: inboxID, LeaseToken: token},
		Visibility: until.Sub(now), Now: now})
	return err
}

func deadLetters(t *testing.T, s storage.Store, f storage.InboxFilter, limit int) []storage.LeasedDelivery {
	t.Helper()
	list, _, err := s.ListDeadLetters(t.Context(), f, storage.DeadLetterKey{}, limit, 0)
	must(t, err, "ListDeadLetters")
	return list
}

func inboxStats(t *testing.T, s storage.Store) []storage.EndpointInboxStats {
	t.Helper()
	st, err := s.InboxStats(t.Context())
	must(t, err, "InboxStats")
	return st
}

func wantStats(t *testing.T, s storage.Store, what string, want ...storage.EndpointInboxStats) {
	t.Helper()
	got := inboxStats(t, s)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	wantSame(t, want, got, what)
}

func testInbox(t *testing.T, h harness) {
	t0 := at(time.Hour)

	t.Run("random operations follow the model of the inbox's rules", func(t *testing.T) {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprint(seed), func(t *testing.T) { followInboxModel(t, claimStore(t, h), seed, 600) })
		}
	})

	t.Run("lease hands out the oldest first, up to Max, counting an attempt", func(t *testing.T) {
		s := inboxFixture(t, h)
		var ds []storage.Delivery
		// Claimed out of order, so that insertion order cannot pass for age.
		for _, i := range []int{3, 1, 5, 2, 4} {
			ds = append(ds, deliver(t, s, "ep-1", "ep-1", fmt.Sprintf("d%d", i), at(time.Duration(i)*time.Second)))
		}
		slices.SortFunc(ds, func(a, b storage.Delivery) int { return a.ReceivedAt.Compare(b.ReceivedAt) })

		req := leaseReq("tok-1", t0, 2)
		until := t0.Add(req.Visibility)
		got := lease(t, s, req)
		wantSame(t, []storage.LeasedDelivery{
			leasedAs(ds[0], "tok-1", 1, until, ds[0].ReceivedAt, ""),
			leasedAs(ds[1], "tok-1", 1, until, ds[1].ReceivedAt, ""),
		}, got, "first lease")

		wantIDs(t, lease(t, s, leaseReq("tok-2", t0, 10)), "second lease", "d3", "d4", "d5")
		wantIDs(t, lease(t, s, leaseReq("tok-3", t0, 10)), "lease with everything leased")
	})

	t.Run("a lease stops at MaxBytes, taking the oldest whatever its size", func(t *testing.T) {
		s := inboxFixture(t, h)
		sizes := claimSized(t, s, 3000, 1000, 1000, 1000)
		bounded := func(token string, maxBytes int64) storage.LeaseRequest {
			req := leaseReq(token, t0, 10)
			req.MaxBytes = maxBytes
			return req
		}
		// The oldest is larger than the bound: taken alone, rather than never.
		wantIDs(t, lease(t, s, bounded("tok-1", 1)), "lease bounded below the oldest's size", "d1")
		// Exactly two fit; the third would go one byte over.
		wantIDs(t, lease(t, s, bounded("tok-2", sizes[1]+sizes[2])), "lease with room for two", "d2", "d3")
		// The rest wait for the next lease, which a bound of 0 does not limit.
		wantIDs(t, lease(t, s, bounded("tok-3", 0)), "unbounded lease", "d4")
	})

	t.Run("a lease stops at MaxBytes across the endpoints it names", func(t *testing.T) { testLeaseBytesAcrossEndpoints(t, h) })

	t.Run("a delivery is not leasable before it is visible", func(t *testing.T) {
		s := inboxFixture(t, h)
		d := deliver(t, s, "ep-1", "ep-1", "d1", t0)
		wantIDs(t, lease(t, s, leaseReq("tok-1", t0.Add(-time.Microsecond), 1)), "lease just before receipt")
		wantIDs(t, lease(t, s, leaseReq("tok-2", d.ReceivedAt, 1)), "lease at receipt", "d1")
	})

	t.Run("lease respects the filter", func(t *testing.T) {
		s := inboxFixture(t, h)
		received := map[string]time.Time{}
		for i, d := range []struct{ endpoint, scope, id string }{
			{"ep-1", "scope-a", "a1"},
			{"ep-2", "scope-b", "b2"},
			{"ep-2", "scope-c", "c2"},
			{"ep-3", "scope-c", "c3"},
			{"ep-1", "scope-c", "c1"},
		} {
			received[d.id] = deliver(t, s, d.endpoint, d.scope, d.id, at(time.Duration(i+1)*time.Second)).ReceivedAt
		}
		cases := []struct {
			name   string
			filter storage.InboxFilter
			want   []string
		}{
			{"one endpoint", storage.InboxFilter{EndpointIDs: []string{"ep-2"}}, []string{"b2", "c2"}},
			{"two endpoints", storage.InboxFilter{EndpointIDs: []string{"ep-3", "ep-1"}}, []string{"a1", "c3", "c1"}},
			{"one scope", storage.InboxFilter{Scopes: []string{"scope-c"}}, []string{"c2", "c3", "c1"}},
			{"two scopes", storage.InboxFilter{Scopes: []string{"scope-b", "scope-a"}}, []string{"a1", "b2"}},
			{"endpoints and scopes must both match", storage.InboxFilter{
				EndpointIDs: []string{"ep-1", "ep-2"}, Scopes: []string{"scope-c"}}, []string{"c2", "c1"}},
			{"unknown endpoint", storage.InboxFilter{EndpointIDs: []string{"ep-9"}}, nil},
			{"unknown scope", storage.InboxFilter{Scopes: []string{"ep-1"}}, nil},
			{"an endpoint named twice", storage.InboxFilter{EndpointIDs: []string{"ep-2", "ep-2"}}, []string{"b2", "c2"}},
			{"more endpoints than are picked one by one", storage.InboxFilter{EndpointIDs: append(
				[]string{"ep-3", "ep-1"}, manyEndpoints(storage.MaxEndpointPicks)...)}, []string{"a1", "c3", "c1"}},
			{"the oldest of all the endpoints, up to Max", storage.InboxFilter{EndpointIDs: []string{"ep-2", "ep-1"}}, []string{"a1", "b2"}},
		}
		for i, c := range cases {
			max := 10
			if strings.HasPrefix(c.name, "the oldest") {
				max = 2
			}
			req := leaseReq(fmt.Sprintf("tok-%d", i), t0, max)
			req.InboxFilter = c.filter
			req.MaxAttempts = 100
			got := lease(t, s, req)
			wantIDs(t, got, c.name, c.want...)
			// Give them back as they were, so that the next case sees every delivery again.
			for _, d := range got {
				nack(t, s, d.InboxID, req.LeaseToken, received[d.InboxID], 100, t0)
			}
		}
	})

	t.Run("a live lease is not leased again; an expired one is, and its old token is lost", func(t *testing.T) {
		s := inboxFixture(t, h)
		d := deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		first := leaseReq("tok-1", t0, 1)
		wantIDs(t, lease(t, s, first), "first lease", "d1")
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(first.Visibility-time.Microsecond), 1)),
			"lease while the first is live")

		expired := t0.Add(first.Visibility)
		second := leaseReq("tok-3", expired, 1)
		takenOver := leasedAs(d, "tok-3", 2, expired.Add(second.Visibility), d.ReceivedAt, "")
		takenOver.PreviousLeaseExpired = true
		wantSame(t, storage.LeaseResult{Deliveries: []storage.LeasedDelivery{takenOver}},
			leaseResult(t, s, second), "lease after expiry")

		if err := s.Ack(t.Context(), "d1", "tok-1", expired); !errors.Is(err, storage.ErrLeaseLost) || errors.Is(err, storage.ErrAlreadyAcked) {
			t.Fatalf("Ack with the expired token, another worker holding the delivery = %v; want a lost lease, not acked", err)
		}
		_, err := s.Nack(t.Context(), "d1", "tok-1", expired, 3, "late", expired)
		wantErr(t, err, storage.ErrLeaseLost, "Nack with the expired token")
		wantErr(t, extendTo(t, s, "d1", "tok-1", expired.Add(time.Hour), expired), storage.ErrLeaseLost,
			"ExtendLease with the expired token")
		ack(t, s, "d1", "tok-3", expired)
		// Once the other worker acked it, the late ack hears that the work is done.
		wantErr(t, s.Ack(t.Context(), "d1", "tok-1", expired), storage.ErrAlreadyAcked, "Ack with the expired token after the takeover's ack")
		wantErr(t, s.AckMany(t.Context(), []storage.LeaseRef{{InboxID: "d1", LeaseToken: "tok-1"}}, expired)[0], storage.ErrAlreadyAcked,
			"AckMany with the expired token after the takeover's ack")
	})

	// A lease waits its turn behind other batches (the one writer, lease lanes) between the
	// server's call and its transaction. Taken at Now, read before that wait, the lease is
	// shorter than the worker asked by the time waited, and what is due or expired is
	// decided at a time already past.
	t.Run("a lease with a clock is taken at the clock's time, not at Now", func(t *testing.T) {
		s := inboxFixture(t, h)
		expiring := deliver(t, s, "ep-1", "ep-1", "expiring", at(1*time.Second))
		first := leaseReq("tok-1", t0, 1)
		wantIDs(t, lease(t, s, first), "first lease", "expiring")
		exhausted := deliver(t, s, "ep-2", "ep-2", "exhausted", at(2*time.Second))
		once := leaseReq("tok-once", t0, 1)
		once.MaxAttempts = 1
		wantIDs(t, lease(t, s, once), "lease of the delivery with one attempt", "exhausted")
		due := deliver(t, s, "ep-1", "ep-1", "due", at(3*time.Second))
		// Visible only after Now, before the clock's time.
		later := deliver(t, s, "ep-1", "ep-1", "later", t0.Add(30*time.Second))

		ran := t0.Add(2 * time.Minute) // after the first leases expired
		req := leaseReq("tok-2", t0, 10)
		req.EndpointIDs = []string{"ep-1"}
		req.Clock = func() time.Time { return ran }
		until := ran.Add(req.Visibility)
		takenOver := leasedAs(expiring, "tok-2", 2, until, expiring.ReceivedAt, "")
		takenOver.PreviousLeaseExpired = true
		wantSame(t, storage.LeaseResult{Deliveries: []storage.LeasedDelivery{
			takenOver,
			leasedAs(due, "tok-2", 1, until, due.ReceivedAt, ""),
			leasedAs(later, "tok-2", 1, until, later.ReceivedAt, ""),
		}}, leaseResult(t, s, req), "lease with a clock")

		// An expired lease with no attempts left is dead-lettered at the clock's time too.
		req = leaseReq("tok-3", t0, 10)
		req.MaxAttempts = 1
		req.EndpointIDs = []string{"ep-2"}
		req.Clock = func() time.Time { return ran }
		wantSame(t, storage.LeaseResult{ExpiredToDead: 1}, leaseResult(t, s, req), "lease of ep-2 with a clock")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters", exhausted.InboxID)
	})

	t.Run("ack ends the delivery", func(t *testing.T) {
		s := inboxFixture(t, h)
		d1 := deliver(t, s, "ep-1", "ep-1", "d1", at(1*time.Second))
		deliver(t, s, "ep-1", "ep-1", "d2", at(2*time.Second))
		wantIDs(t, lease(t, s, leaseReq("tok-1", t0, 2)), "lease", "d1", "d2")
		leaseEnd := t0.Add(time.Minute)
		wantStats(t, s, "stats with two leased", storage.EndpointInboxStats{EndpointID: "ep-1", Leased: 2, EarliestLeaseEnd: leaseEnd})

		ack(t, s, "d1", "tok-1", t0)
		wantStats(t, s, "stats after one ack", storage.EndpointInboxStats{EndpointID: "ep-1", Leased: 1, EarliestLeaseEnd: leaseEnd})
		// A second ack (the first one's answer lost) says the work is done, not merely that the
		// lease is gone: a worker can tell it from a lease another worker holds.
		wantErr(t, s.Ack(t.Context(), "d1", "tok-1", t0), storage.ErrAlreadyAcked, "second Ack")
		wantErr(t, s.Ack(t.Context(), "d2", "tok-other", t0), storage.ErrLeaseLost, "Ack with another token")
		if err := s.Ack(t.Context(), "d2", "tok-other", t0); errors.Is(err, storage.ErrAlreadyAcked) {
			t.Fatalf("Ack with another token of a delivery still leased = %v, which says it was acked", err)
		}
		wantErr(t, s.Ack(t.Context(), "nope", "tok-1", t0), storage.ErrNotFound, "Ack of an unknown delivery")
		ack(t, s, "d2", "tok-1", t0.Add(time.Second))
		wantStats(t, s, "stats after both acks")

		// Acked deliveries are never leased again, not even when their lease would have ended.
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(24*time.Hour), 10)), "lease after the acks")
		// The record stays until retention removes it.
		wantSame(t, d1, getDelivery(t, s, "d1"), "acked delivery")
	})

	t.Run("delivery endpoints name the endpoint of each delivery in any state", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-2", "scope-x", "d1", at(time.Second))
		deliver(t, s, "ep-1", "ep-1", "d2", at(2*time.Second))
		wantEndpoints := func(what string, ids []string, want map[string]string) {
			t.Helper()
			got, err := s.DeliveryEndpoints(t.Context(), ids)
			must(t, err, "DeliveryEndpoints "+what)
			wantSame(t, want, got, "DeliveryEndpoints "+what)
		}
		wantEndpoints("pending", []string{"d1"}, map[string]string{"d1": "ep-2"})
		lease(t, s, leaseReq("tok-1", t0, 1))
		wantEndpoints("leased", []string{"d1"}, map[string]string{"d1": "ep-2"})
		ack(t, s, "d1", "tok-1", t0)
		wantEndpoints("acked", []string{"d1"}, map[string]string{"d1": "ep-2"})
		// Several at once, unknown ids left out, an id given twice answered once; none at all.
		wantEndpoints("of several", []string{"d2", "nope", "d1", "d2"}, map[string]string{"d1": "ep-2", "d2": "ep-1"})
		wantEndpoints("of unknown ids", []string{"nope", "ep-1"}, map[string]string{})
		wantEndpoints("of no ids", nil, map[string]string{})
	})

	t.Run("an ack after the lease expired is lost even if nobody leased it again", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		req := leaseReq("tok-1", t0, 1)
		lease(t, s, req)
		wantErr(t, s.Ack(t.Context(), "d1", "tok-1", t0.Add(req.Visibility)), storage.ErrLeaseLost, "late Ack")
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(req.Visibility), 1)), "lease after the late ack", "d1")
	})

	t.Run("concurrent acks are each answered as if alone", func(t *testing.T) {
		s := inboxFixture(t, h)
		acks := concurrentAcks(t, s)
		errs := make([]error, len(acks))
		race(len(acks), func(i int) { errs[i] = s.Ack(t.Context(), acks[i].inboxID, acks[i].token, ackNow) })
		checkConcurrentAcks(t, s, acks, errs)
	})

	t.Run("acks of one AckMany are each answered as Ack would", func(t *testing.T) {
		s := inboxFixture(t, h)
		acks := concurrentAcks(t, s)
		checkConcurrentAcks(t, s, acks, s.AckMany(t.Context(), leaseRefs(acks), ackNow))
		if errs := s.AckMany(t.Context(), nil, ackNow); len(errs) != 0 {
			t.Errorf("AckMany of nothing = %v", errs)
		}
	})

	t.Run("nack makes the delivery leasable again at retryAt, not before", func(t *testing.T) {
		s := inboxFixture(t, h)
		d := deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		lease(t, s, leaseReq("tok-1", t0, 1))
		retryAt := t0.Add(10 * time.Minute)
		if dead := nack(t, s, "d1", "tok-1", retryAt, 3, t0.Add(time.Second)); dead {
			t.Fatal("Nack after one attempt of three reported dead")
		}
		wantStats(t, s, "stats after the nack",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: retryAt})
		wantIDs(t, lease(t, s, leaseReq("tok-2", retryAt.Add(-time.Microsecond), 1)), "lease before retryAt")
		req := leaseReq("tok-3", retryAt, 1)
		wantSame(t, []storage.LeasedDelivery{
			leasedAs(d, "tok-3", 2, retryAt.Add(req.Visibility), retryAt, "failed: tok-1"),
		}, lease(t, s, req), "lease at retryAt")

		_, err := s.Nack(t.Context(), "d1", "tok-1", retryAt, 3, "stale", retryAt)
		wantErr(t, err, storage.ErrLeaseLost, "Nack with the old token")
		_, err = s.Nack(t.Context(), "nope", "tok-3", retryAt, 3, "missing", retryAt)
		wantErr(t, err, storage.ErrNotFound, "Nack of an unknown delivery")
	})

	t.Run("nack at max attempts moves the delivery to dead", func(t *testing.T) {
		s := inboxFixture(t, h)
		d := deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		req := leaseReq("tok-1", t0, 1)
		req.MaxAttempts = 2
		lease(t, s, req)
		if nack(t, s, "d1", "tok-1", t0, 2, t0) {
			t.Fatal("Nack after one attempt of two reported dead")
		}
		req.LeaseToken = "tok-2"
		wantIDs(t, lease(t, s, req), "second lease", "d1")
		if !nack(t, s, "d1", "tok-2", t0, 2, t0) {
			t.Fatal("Nack after two attempts of two did not report dead")
		}
		wantIDs(t, lease(t, s, leaseReq("tok-3", t0.Add(24*time.Hour), 10)), "lease of a dead delivery")
		wantSame(t, []storage.LeasedDelivery{{
			Delivery: d, State: storage.StateDead, Attempts: 2, VisibleAt: t0, LastError: "failed: tok-2",
		}}, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters")
		wantStats(t, s, "stats", storage.EndpointInboxStats{EndpointID: "ep-1", Dead: 1})
	})

	t.Run("give back on the last attempt returns the attempt and never kills", func(t *testing.T) {
		s := inboxFixture(t, h)
		d := deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		req := leaseReq("tok-1", t0, 1)
		req.MaxAttempts = 1
		lease(t, s, req)
		// A worker stopping for a deploy gives its only attempt back: a nack here would
		// dead-letter a delivery nobody ran to its end.
		retryAt := t0.Add(time.Minute)
		must(t, s.GiveBack(t.Context(), "d1", "tok-1", retryAt, "stopping", t0.Add(time.Second)), "GiveBack")
		wantStats(t, s, "stats after giving back", storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: retryAt})
		wantIDs(t, lease(t, s, leaseReq("tok-2", retryAt.Add(-time.Microsecond), 1)), "lease before retryAt")
		req = leaseReq("tok-3", retryAt, 1)
		req.MaxAttempts = 1
		wantSame(t, []storage.LeasedDelivery{
			leasedAs(d, "tok-3", 1, retryAt.Add(req.Visibility), retryAt, "stopping"),
		}, lease(t, s, req), "lease after giving back: the same attempt again")

		wantErr(t, s.GiveBack(t.Context(), "d1", "tok-1", retryAt, "stale", retryAt), storage.ErrLeaseLost, "GiveBack with the old token")
		wantErr(t, s.GiveBack(t.Context(), "nope", "tok-3", retryAt, "missing", retryAt), storage.ErrNotFound, "GiveBack of an unknown delivery")
		expired := retryAt.Add(req.Visibility)
		wantErr(t, s.GiveBack(t.Context(), "d1", "tok-3", expired, "late", expired), storage.ErrLeaseLost, "GiveBack of an expired lease")
		if !nack(t, s, "d1", "tok-3", retryAt, 1, retryAt.Add(time.Second)) {
			t.Fatal("Nack of the attempt leased again did not dead-letter at max attempts 1")
		}
	})

	t.Run("an expired lease at max attempts moves to dead on the next lease", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(1*time.Second))
		deliver(t, s, "ep-2", "ep-2", "d2", at(2*time.Second))
		req := leaseReq("tok-1", t0, 10)
		req.MaxAttempts = 1
		wantIDs(t, lease(t, s, req), "first lease", "d1", "d2")

		expired := t0.Add(req.Visibility)
		// A lease for ep-2 only moves ep-2's delivery.
		req = leaseReq("tok-2", expired, 10)
		req.MaxAttempts = 1
		req.EndpointIDs = []string{"ep-2"}
		wantSame(t, storage.LeaseResult{ExpiredToDead: 1}, leaseResult(t, s, req), "lease for ep-2 after expiry")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters after the ep-2 lease", "d2")
		// ep-1's lease has run out, but no lease has taken it over yet: it is still leased.
		wantStats(t, s, "stats after the ep-2 lease",
			storage.EndpointInboxStats{EndpointID: "ep-1", Leased: 1, EarliestLeaseEnd: expired},
			storage.EndpointInboxStats{EndpointID: "ep-2", Dead: 1})

		req.EndpointIDs = nil
		req.LeaseToken = "tok-3"
		wantSame(t, storage.LeaseResult{ExpiredToDead: 1}, leaseResult(t, s, req), "lease for all after expiry")
		wantSame(t, storage.LeaseResult{}, leaseResult(t, s, req), "lease once both are dead")
		dead := deadLetters(t, s, storage.InboxFilter{}, 10)
		wantIDs(t, dead, "dead letters after the second lease", "d1", "d2")
		for _, d := range dead {
			if d.State != storage.StateDead || d.Attempts != 1 || d.LeaseToken != "" || !d.LeasedUntil.IsZero() {
				t.Errorf("dead letter %s: state %q, attempts %d, lease %q until %s; want dead, 1, none",
					d.InboxID, d.State, d.Attempts, d.LeaseToken, fmtTime(d.LeasedUntil))
			}
		}
		wantErr(t, s.Ack(t.Context(), "d1", "tok-1", expired), storage.ErrLeaseLost, "Ack of a dead delivery")
	})

	// A worker nacked with its error, then crashed on the last attempt: the dead letter must
	// still say what the worker saw fail, not only that a lease ran out, or the operator has
	// nothing to go on.
	t.Run("an expired lease moved to dead keeps the worker's last error", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "nacked", at(1*time.Second))
		deliver(t, s, "ep-1", "ep-1", "silent", at(2*time.Second))
		req := leaseReq("tok-1", t0, 10)
		req.MaxAttempts = 2
		wantIDs(t, lease(t, s, req), "first lease", "nacked", "silent")
		nack(t, s, "nacked", "tok-1", t0, 2, t0)
		// "silent" is left to expire: its first lease ends without an error.
		req.LeaseToken, req.Now = "tok-2", t0.Add(req.Visibility)
		wantIDs(t, lease(t, s, req), "second lease", "silent", "nacked")
		req.LeaseToken, req.Now = "tok-3", req.Now.Add(req.Visibility)
		if res := leaseResult(t, s, req); res.ExpiredToDead != 2 || len(res.Deliveries) != 0 {
			t.Fatalf("lease after the last leases expired = %+v, want 2 moved to dead and none leased", res)
		}
		got := map[string]string{}
		for _, d := range deadLetters(t, s, storage.InboxFilter{}, 10) {
			got[d.InboxID] = d.LastError
		}
		wantSame(t, map[string]string{"nacked": "lease expired; last error: failed: tok-1", "silent": "lease expired"},
			got, "last errors of the dead letters")
	})

	t.Run("pending deliveries with no attempts left under a lowered limit move to dead", func(t *testing.T) {
		s := inboxFixture(t, h)
		spent := deliver(t, s, "ep-1", "ep-1", "spent", at(1*time.Second))
		later := deliver(t, s, "ep-2", "ep-2", "later", at(2*time.Second))
		deliver(t, s, "ep-1", "once", "once", at(3*time.Second))
		deliver(t, s, "ep-2", "ep-2", "leased", at(4*time.Second))
		deliver(t, s, "ep-1", "ep-1", "new", t0.Add(time.Hour))
		// Two attempts each under a limit of three, but "once" one and "new" none; "leased"
		// keeps its second lease, "later" is due tomorrow and its worker gave no error.
		for _, d := range lease(t, s, leaseReq("tok-1", t0, 10)) {
			nack(t, s, d.InboxID, "tok-1", t0, 3, t0)
		}
		second := leaseReq("tok-2", t0, 10)
		second.Scopes = []string{"ep-1", "ep-2"}
		wantIDs(t, lease(t, s, second), "second lease", "later", "leased", "spent")
		nack(t, s, "spent", "tok-2", t0, 3, t0)
		tomorrow := t0.Add(24 * time.Hour)
		_, err := s.Nack(t.Context(), "later", "tok-2", tomorrow, 3, "", t0)
		must(t, err, "Nack later")

		req := storage.ExhaustedRequest{MaxAttempts: 2, Reason: "attempts used up", Batch: 1, Now: t0.Add(time.Second)}
		for i, want := range []int64{1, 1, 0} {
			n, err := s.DeadLetterExhausted(t.Context(), req)
			must(t, err, "DeadLetterExhausted")
			if n != want {
				t.Fatalf("DeadLetterExhausted call %d moved %d, want %d", i+1, n, want)
			}
		}
		wantSame(t, []storage.LeasedDelivery{
			{Delivery: spent, State: storage.StateDead, Attempts: 2, VisibleAt: t0, LastError: "attempts used up; last error: failed: tok-2"},
			{Delivery: later, State: storage.StateDead, Attempts: 2, VisibleAt: tomorrow, LastError: "attempts used up"},
		}, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters")
		wantStats(t, s, "stats",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 2, Dead: 1, OldestPendingAt: t0},
			storage.EndpointInboxStats{EndpointID: "ep-2", Leased: 1, Dead: 1, EarliestLeaseEnd: t0.Add(second.Visibility)})

		// The live lease was left to Lease, which dead-letters it once it expires.
		third := leaseReq("tok-3", t0.Add(time.Hour), 10)
		third.MaxAttempts = 2
		res := leaseResult(t, s, third)
		wantIDs(t, res.Deliveries, "lease under the lower limit", "once", "new")
		if res.ExpiredToDead != 1 {
			t.Errorf("lease under the lower limit moved %d expired leases to dead, want 1", res.ExpiredToDead)
		}

		for _, bad := range []storage.ExhaustedRequest{{MaxAttempts: 0, Batch: 1}, {MaxAttempts: 1, Batch: 0}} {
			_, err := s.DeadLetterExhausted(t.Context(), bad)
			wantErr(t, err, storage.ErrInvalid, fmt.Sprintf("DeadLetterExhausted %+v", bad))
		}
	})

	// A worker died on a delivery's last attempt, and no lease asks for its endpoint any more
	// (its workers stopped, or filtered to other endpoints): Lease never dead-letters it, so
	// DeadLetterExhausted with ExpiredLeases must, whatever its endpoint, exactly as Lease
	// would, and leave alone live leases, expired ones with attempts left, and pending ones.
	t.Run("expired last leases move to dead whatever their endpoint, as a lease moves them", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "nacked", at(1*time.Second))
		silent := deliver(t, s, "ep-2", "ep-2", "silent", at(2*time.Second))
		deliver(t, s, "ep-1", "ep-1", "live", at(3*time.Second))
		deliver(t, s, "ep-1", "ep-1", "spent", at(4*time.Second))
		deliver(t, s, "ep-3", "ep-3", "early", at(5*time.Second))
		first := leaseReq("tok-1", t0, 10)
		wantIDs(t, lease(t, s, first), "first lease", "nacked", "silent", "live", "spent", "early")
		nack(t, s, "nacked", "tok-1", t0, 3, t0)
		nack(t, s, "spent", "tok-1", t0, 3, t0)
		// The second lease, of ep-1 and ep-2 only, takes over "silent" and "live" and leases
		// the nacked ones: all four on their second attempt. "early", of ep-3, keeps its expired
		// first lease, with attempts left.
		second := leaseReq("tok-2", t0.Add(first.Visibility), 10)
		second.EndpointIDs = []string{"ep-1", "ep-2"}
		wantIDs(t, lease(t, s, second), "second lease", "silent", "live", "nacked", "spent")
		nack(t, s, "spent", "tok-2", second.Now, 3, second.Now)
		ended := second.Now.Add(second.Visibility)
		liveUntil := ended.Add(time.Hour)
		must(t, extendTo(t, s, "live", "tok-2", liveUntil, second.Now), "ExtendLease live")

		req := storage.ExhaustedRequest{MaxAttempts: 2, ExpiredLeases: true, Reason: "not used", Batch: 1, Now: ended.Add(-time.Millisecond)}
		n, err := s.DeadLetterExhausted(t.Context(), req)
		must(t, err, "DeadLetterExhausted of expired leases before they end")
		if n != 0 {
			t.Fatalf("DeadLetterExhausted of expired leases a millisecond before they end moved %d, want 0", n)
		}
		req.Now = ended
		for i, want := range []int64{1, 1, 0} {
			n, err := s.DeadLetterExhausted(t.Context(), req)
			must(t, err, "DeadLetterExhausted of expired leases")
			if n != want {
				t.Fatalf("DeadLetterExhausted of expired leases, call %d, moved %d, want %d", i+1, n, want)
			}
		}
		got := deadLetters(t, s, storage.InboxFilter{}, 10)
		wantIDs(t, got, "dead letters", "silent", "nacked")
		wantSame(t, storage.LeasedDelivery{Delivery: silent, State: storage.StateDead, Attempts: 2, VisibleAt: silent.ReceivedAt,
			LastError: "lease expired"}, got[0], "the silent dead letter")
		if d := got[1]; d.State != storage.StateDead || d.Attempts != 2 || d.LeaseToken != "" || !d.LeasedUntil.IsZero() ||
			d.LastError != "lease expired; last error: failed: tok-1" {
			t.Errorf("dead letter nacked: state %q, attempts %d, lease %q until %s, last error %q; want dead, 2, none, %q",
				d.State, d.Attempts, d.LeaseToken, fmtTime(d.LeasedUntil), d.LastError, "lease expired; last error: failed: tok-1")
		}
		wantStats(t, s, "stats",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, Leased: 1, Dead: 1, OldestPendingAt: second.Now, EarliestLeaseEnd: liveUntil},
			storage.EndpointInboxStats{EndpointID: "ep-2", Dead: 1},
			storage.EndpointInboxStats{EndpointID: "ep-3", Leased: 1, EarliestLeaseEnd: t0.Add(first.Visibility)})
		wantErr(t, s.Ack(t.Context(), "silent", "tok-2", ended), storage.ErrLeaseLost, "Ack of a dead-lettered expired lease")
		must(t, s.Ack(t.Context(), "live", "tok-2", ended), "Ack of the live lease")

		// A lease after finds nothing left to dead-letter, and takes "early" over.
		third := leaseReq("tok-3", ended, 10)
		third.MaxAttempts = 2
		res := leaseResult(t, s, third)
		wantIDs(t, res.Deliveries, "lease after", "early")
		if res.ExpiredToDead != 0 || !res.Deliveries[0].PreviousLeaseExpired {
			t.Errorf("lease after: %d moved to dead, early taken over from an expired lease %v; want 0, true",
				res.ExpiredToDead, res.Deliveries[0].PreviousLeaseExpired)
		}
		// Requeued, a dead-lettered expired lease is leasable again.
		must(t, s.Requeue(t.Context(), "silent", ended), "Requeue silent")
		third.LeaseToken = "tok-4"
		wantIDs(t, lease(t, s, third), "lease after the requeue", "silent")
	})

	t.Run("dead letters are listed within maxBytes, the oldest whatever its size", func(t *testing.T) {
		s := inboxFixture(t, h)
		sizes := claimSized(t, s, 3000, 1000, 1000, 1000)
		for _, d := range lease(t, s, leaseReq("tok-1", t0, 10)) {
			if !nack(t, s, d.InboxID, "tok-1", t0, 1, t0) {
				t.Fatalf("Nack of %s at max attempts did not report dead", d.InboxID)
			}
		}
		list := func(maxBytes int64) []storage.LeasedDelivery {
			t.Helper()
			got, _, err := s.ListDeadLetters(t.Context(), storage.InboxFilter{}, storage.DeadLetterKey{}, 10, maxBytes)
			must(t, err, fmt.Sprintf("ListDeadLetters within %d bytes", maxBytes))
			return got
		}
		wantIDs(t, list(1), "bounded below the oldest's size", "d1")
		wantIDs(t, list(sizes[0]+sizes[1]), "room for two", "d1", "d2")
		wantIDs(t, list(sizes[0]+sizes[1]+sizes[2]-1), "one byte short of three", "d1", "d2")
		wantIDs(t, list(0), "unbounded", "d1", "d2", "d3", "d4")
	})

	t.Run("dead letters are filtered, limited and listed oldest first", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "scope-a", "a3", at(3*time.Second))
		deliver(t, s, "ep-1", "scope-a", "a1", at(1*time.Second))
		deliver(t, s, "ep-2", "scope-b", "b2", at(2*time.Second))
		deliver(t, s, "ep-1", "scope-c", "c4", at(4*time.Second))
		deliver(t, s, "ep-1", "scope-a", "live", at(5*time.Second))
		req := leaseReq("tok-1", t0, 4)
		for _, d := range lease(t, s, req) {
			if !nack(t, s, d.InboxID, "tok-1", t0, 1, t0) {
				t.Fatalf("Nack of %s at max attempts did not report dead", d.InboxID)
			}
		}
		all := storage.InboxFilter{}
		wantIDs(t, deadLetters(t, s, all, 10), "all", "a1", "b2", "a3", "c4")
		wantIDs(t, deadLetters(t, s, all, 2), "limit 2", "a1", "b2")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{EndpointIDs: []string{"ep-1"}}, 10), "ep-1", "a1", "a3", "c4")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{Scopes: []string{"scope-a", "scope-b"}}, 10), "scopes",
			"a1", "b2", "a3")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{EndpointIDs: []string{"ep-3"}}, 10), "ep-3")
	})

	testDeadLetterPages(t, h)

	// deadPendingLeased makes a store with, on ep-1, d1 dead (its one attempt nacked), one
	// delivery pending and one leased for a day by the first lease, which it returns with d1.
	deadPendingLeased := func(t *testing.T) (storage.Store, storage.Delivery, storage.LeaseRequest) {
		t.Helper()
		s := inboxFixture(t, h)
		d := deliver(t, s, "ep-1", "ep-1", "d1", at(1*time.Second))
		deliver(t, s, "ep-1", "ep-1", "pending", t0.Add(time.Hour))
		deliver(t, s, "ep-1", "ep-1", "leased", at(2*time.Second))
		first := leaseReq("tok-1", t0, 2)
		first.Visibility = 24 * time.Hour
		wantIDs(t, lease(t, s, first), "first lease", "d1", "leased")
		nack(t, s, "d1", "tok-1", t0, 1, t0)
		return s, d, first
	}

	t.Run("requeue makes a dead delivery pending with no attempts", func(t *testing.T) {
		s, d, first := deadPendingLeased(t)

		wantErr(t, s.Requeue(t.Context(), "pending", t0), storage.ErrNotFound, "Requeue of a pending delivery")
		wantErr(t, s.Requeue(t.Context(), "leased", t0), storage.ErrNotFound, "Requeue of a leased delivery")
		wantErr(t, s.Requeue(t.Context(), "nope", t0), storage.ErrNotFound, "Requeue of an unknown delivery")

		requeued := t0.Add(time.Minute)
		must(t, s.Requeue(t.Context(), "d1", requeued), "Requeue")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters after requeue")
		wantErr(t, s.Requeue(t.Context(), "d1", requeued), storage.ErrNotFound, "second Requeue")
		wantStats(t, s, "stats after requeue", storage.EndpointInboxStats{
			EndpointID: "ep-1", Pending: 2, Leased: 1, OldestPendingAt: requeued, EarliestLeaseEnd: t0.Add(first.Visibility)})

		wantIDs(t, lease(t, s, leaseReq("tok-2", requeued.Add(-time.Microsecond), 10)), "lease before requeue time")
		req := leaseReq("tok-3", requeued, 1)
		wantSame(t, []storage.LeasedDelivery{
			leasedAs(d, "tok-3", 1, requeued.Add(req.Visibility), requeued, "failed: tok-1"),
		}, lease(t, s, req), "lease after requeue")
	})

	t.Run("discard settles a dead delivery unrun, as an ack would", func(t *testing.T) {
		s, _, first := deadPendingLeased(t)

		for _, id := range []string{"pending", "leased", "nope", "d\x00"} {
			wantErr(t, s.Discard(t.Context(), id, "discarded: why", t0), storage.ErrNotFound, "Discard of "+id)
		}
		discarded := t0.Add(time.Minute)
		must(t, s.Discard(t.Context(), "d1", "discarded: poison\x00", discarded), "Discard")
		wantIDs(t, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters after discard")
		wantErr(t, s.Discard(t.Context(), "d1", "discarded: again", discarded), storage.ErrNotFound, "second Discard")
		wantErr(t, s.Requeue(t.Context(), "d1", discarded), storage.ErrNotFound, "Requeue of a discarded delivery")
		wantStats(t, s, "stats after discard", storage.EndpointInboxStats{
			EndpointID: "ep-1", Pending: 1, Leased: 1, OldestPendingAt: t0.Add(time.Hour), EarliestLeaseEnd: t0.Add(first.Visibility)})
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(48*time.Hour), 10)), "lease after discard", "leased", "pending")

		// Its claim stays: a redelivery is the same event.
		if r := claim(t, s, newDelivery("ep-1", "ep-1", "evt-d1", "again")); r.Accepted || r.InboxID != "d1" {
			t.Fatalf("claim of a discarded delivery's identity: %+v, want the first claim", r)
		}
		// Retention takes it, and then its claim, as it takes acked deliveries: counted from
		// the discard, not from when it died.
		req := storage.SweepRequest{AckedBefore: discarded, Batch: 10}
		if res, err := s.Sweep(t.Context(), req); err != nil || res != (storage.SweepResult{}) {
			t.Fatalf("Sweep before the discard's retention: %+v, %v; want nothing deleted", res, err)
		}
		req.AckedBefore = discarded.Add(time.Microsecond)
		if res, err := s.Sweep(t.Context(), req); err != nil || res != (storage.SweepResult{InboxDeleted: 1}) {
			t.Fatalf("Sweep after the discard's retention: %+v, %v; want the delivery", res, err)
		}
		wantNoDelivery(t, s, "d1")
		req.ClaimsBefore = discarded // after every claim but "pending"'s: only d1's, now gone, goes
		if res, err := s.Sweep(t.Context(), req); err != nil || res != (storage.SweepResult{ClaimsDeleted: 1}) {
			t.Fatalf("Sweep of the claims: %+v, %v; want d1's", res, err)
		}
	})

	t.Run("settling a dead letter records its audit event with the delivery's endpoint", func(t *testing.T) {
		SettleDeadLettersAudited(t, h.fresh(t))
	})

	t.Run("extend lease keeps the delivery from others until it ends", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(1*time.Second))
		req := leaseReq("tok-1", t0, 1)
		lease(t, s, req)
		until := t0.Add(5 * time.Minute)
		extended, err := s.ExtendLease(t.Context(), storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: "d1", LeaseToken: "tok-1"},
			Visibility: until.Sub(t0.Add(30 * time.Second)), Now: t0.Add(30 * time.Second)})
		must(t, err, "ExtendLease")
		wantSame(t, until, extended, "the end ExtendLease returns")
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(req.Visibility), 1)), "lease after the original end")
		wantIDs(t, lease(t, s, leaseReq("tok-3", until.Add(-time.Microsecond), 1)), "lease just before the new end")
		wantStats(t, s, "stats while extended", storage.EndpointInboxStats{EndpointID: "ep-1", Leased: 1, EarliestLeaseEnd: until})
		// The extended lease still acks.
		ack(t, s, "d1", "tok-1", until.Add(-time.Microsecond))

		deliver(t, s, "ep-1", "ep-1", "d2", at(2*time.Second))
		lease(t, s, leaseReq("tok-4", t0, 1))
		wantErr(t, extendTo(t, s, "d2", "tok-4", t0.Add(time.Hour), t0.Add(req.Visibility)),
			storage.ErrLeaseLost, "ExtendLease after expiry")
		wantErr(t, extendTo(t, s, "d2", "tok-other", t0.Add(time.Hour), t0), storage.ErrLeaseLost,
			"ExtendLease with another token")
		wantErr(t, extendTo(t, s, "nope", "tok-4", t0.Add(time.Hour), t0), storage.ErrNotFound,
			"ExtendLease of an unknown delivery")
		wantIDs(t, lease(t, s, leaseReq("tok-5", t0.Add(req.Visibility), 1)), "lease after the failed extension", "d2")
	})

	// An extension waits its turn too (the one writer, a connection, a retry) between the
	// server's call and its statement. Taken at Now, read before that wait, the lease ends
	// early by the time waited, and a lease that ran out meanwhile is found live.
	t.Run("an extension with a clock is taken at the clock's time, not at Now", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(1*time.Second))
		deliver(t, s, "ep-2", "ep-2", "d2", at(2*time.Second))
		first := leaseReq("tok-1", t0, 1)
		first.EndpointIDs = []string{"ep-1"}
		wantIDs(t, lease(t, s, first), "lease of d1", "d1")
		second := leaseReq("tok-2", t0, 1)
		second.EndpointIDs = []string{"ep-2"}
		wantIDs(t, lease(t, s, second), "lease of d2", "d2")

		// Live at the clock's time; the nanoseconds are more than a store keeps, and the end
		// returned is the one stored.
		ran := t0.Add(30*time.Second + 700*time.Nanosecond)
		req := storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: "d1", LeaseToken: "tok-1"},
			Visibility: 5 * time.Minute, Now: t0, Clock: func() time.Time { return ran }}
		until := ran.Add(req.Visibility).Truncate(time.Microsecond)
		got, err := s.ExtendLease(t.Context(), req)
		must(t, err, "ExtendLease with a clock")
		wantSame(t, until, got, "the end ExtendLease with a clock returns")
		wantStats(t, s, "stats after the extension with a clock",
			storage.EndpointInboxStats{EndpointID: "ep-1", Leased: 1, EarliestLeaseEnd: until},
			storage.EndpointInboxStats{EndpointID: "ep-2", Leased: 1, EarliestLeaseEnd: t0.Add(second.Visibility)})
		again := leaseReq("tok-3", until.Add(-time.Microsecond), 1)
		again.EndpointIDs = []string{"ep-1"}
		wantIDs(t, lease(t, s, again), "lease of ep-1 just before the clock's end")

		// Live at Now, run out by the clock's time: refused, and the lease keeps its end.
		req = storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: "d2", LeaseToken: "tok-2"},
			Visibility: 5 * time.Minute, Now: t0, Clock: func() time.Time { return t0.Add(second.Visibility) }}
		_, err = s.ExtendLease(t.Context(), req)
		wantErr(t, err, storage.ErrLeaseLost, "ExtendLease with a clock past the lease's end")
		wantStats(t, s, "stats after the refused extension",
			storage.EndpointInboxStats{EndpointID: "ep-1", Leased: 1, EarliestLeaseEnd: until},
			storage.EndpointInboxStats{EndpointID: "ep-2", Leased: 1, EarliestLeaseEnd: t0.Add(second.Visibility)})
	})

	t.Run("stats count by state per endpoint with the oldest pending", func(t *testing.T) {
		s := inboxFixture(t, h)
		wantStats(t, s, "stats of an empty inbox")
		for i, id := range []string{"a", "b", "c", "d"} {
			deliver(t, s, "ep-1", "ep-1", id, at(time.Duration(i+1)*time.Second))
		}
		deliver(t, s, "ep-2", "ep-2", "acked", at(time.Second))
		deliver(t, s, "ep-3", "ep-3", "e", at(9*time.Second))

		one := func(token, endpoint string) string {
			req := leaseReq(token, t0, 1)
			req.EndpointIDs = []string{endpoint}
			got := lease(t, s, req)
			if len(got) != 1 {
				t.Fatalf("lease %s of %s: got %d deliveries, want 1", token, endpoint, len(got))
			}
			return got[0].InboxID
		}
		one("tok-a", "ep-1")                                 // a: leased
		nack(t, s, one("tok-b", "ep-1"), "tok-b", t0, 1, t0) // b: dead
		ack(t, s, one("tok-acked", "ep-2"), "tok-acked", t0) // ep-2: nothing left
		wantStats(t, s, "stats",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 2, Leased: 1, Dead: 1, OldestPendingAt: at(3 * time.Second), EarliestLeaseEnd: t0.Add(time.Minute)},
			storage.EndpointInboxStats{EndpointID: "ep-3", Pending: 1, OldestPendingAt: at(9 * time.Second)})
	})

	t.Run("stats report each endpoint's earliest lease end, run out or not", func(t *testing.T) {
		s := inboxFixture(t, h)
		for i, id := range []string{"a", "b", "c"} {
			deliver(t, s, "ep-1", "ep-1", id, at(time.Duration(i+1)*time.Second))
		}
		deliver(t, s, "ep-2", "ep-2", "e", at(4*time.Second))
		one := func(token, endpoint string, visibility time.Duration) string {
			req := leaseReq(token, t0, 1)
			req.EndpointIDs, req.Visibility = []string{endpoint}, visibility
			got := lease(t, s, req)
			if len(got) != 1 {
				t.Fatalf("lease %s of %s: got %d deliveries, want 1", token, endpoint, len(got))
			}
			return got[0].InboxID
		}
		one("tok-a", "ep-1", time.Minute)    // a: until t0 + 1 min
		one("tok-b", "ep-1", 10*time.Minute) // b: until t0 + 10 min
		one("tok-e", "ep-2", 5*time.Minute)  // e: until t0 + 5 min
		wantStats(t, s, "stats with three leases",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, Leased: 2, OldestPendingAt: at(3 * time.Second), EarliestLeaseEnd: t0.Add(time.Minute)},
			storage.EndpointInboxStats{EndpointID: "ep-2", Leased: 1, EarliestLeaseEnd: t0.Add(5 * time.Minute)})

		// Extended past b's end, a's lease is no longer the earliest.
		must(t, extendTo(t, s, "a", "tok-a", t0.Add(20*time.Minute), t0.Add(30*time.Second)), "ExtendLease a")
		// e goes back to pending, b is acked: only a's lease is left, and the stats do not
		// depend on the time they are read, so it is reported after it has run out as before.
		nack(t, s, "e", "tok-e", t0.Add(time.Hour), 3, t0.Add(time.Minute))
		wantStats(t, s, "stats after the extension and a nack",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, Leased: 2, OldestPendingAt: at(3 * time.Second), EarliestLeaseEnd: t0.Add(10 * time.Minute)},
			storage.EndpointInboxStats{EndpointID: "ep-2", Pending: 1, OldestPendingAt: t0.Add(time.Hour)})
		ack(t, s, "b", "tok-b", t0.Add(2*time.Minute))
		wantStats(t, s, "stats with only a's lease left",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, Leased: 1, OldestPendingAt: at(3 * time.Second), EarliestLeaseEnd: t0.Add(20 * time.Minute)},
			storage.EndpointInboxStats{EndpointID: "ep-2", Pending: 1, OldestPendingAt: t0.Add(time.Hour)})

		// A dead delivery has no lease end.
		if !nack(t, s, "a", "tok-a", t0.Add(3*time.Minute), 1, t0.Add(3*time.Minute)) {
			t.Fatal("Nack of a at max attempts did not report dead")
		}
		wantStats(t, s, "stats after a dies",
			storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, Dead: 1, OldestPendingAt: at(3 * time.Second)},
			storage.EndpointInboxStats{EndpointID: "ep-2", Pending: 1, OldestPendingAt: t0.Add(time.Hour)})
	})

	t.Run("concurrent workers lease every delivery once and never share one", func(t *testing.T) {
		const (
			deliveries = 60
			workers    = 8
		)
		open := h.reopenable(t)
		stores := []storage.Store{open(t), open(t), open(t)}
		for _, e := range []string{"ep-1", "ep-2"} {
			createEndpoint(t, stores[0], newEndpoint(e))
		}
		for i := range deliveries {
			e := fmt.Sprintf("ep-%d", i%2+1)
			deliver(t, stores[i%len(stores)], e, e, fmt.Sprintf("d%02d", i), at(time.Duration(i)*time.Millisecond))
		}

		var (
			mu     sync.Mutex
			holder = map[string]int{} // inbox id → worker holding it now
			acked  = map[string]int{} // inbox id → how often acked
			errs   []error
		)
		fail := func(err error) {
			mu.Lock()
			defer mu.Unlock()
			errs = append(errs, err)
		}
		// Every lease lasts the whole test, so a delivery leased twice was handed out while live.
		race(workers, func(w int) {
			s := stores[w%len(stores)]
			for round := 0; ; round++ {
				req := leaseReq(fmt.Sprintf("w%d-r%d", w, round), t0, 1+(w+round)%3)
				req.Visibility = 24 * time.Hour
				result, err := s.Lease(t.Context(), req)
				if err != nil {
					fail(fmt.Errorf("worker %d: Lease: %w", w, err))
					return
				}
				got := result.Deliveries
				if len(got) == 0 {
					return
				}
				if len(got) > req.Max {
					fail(fmt.Errorf("worker %d: leased %d deliveries, Max %d", w, len(got), req.Max))
				}
				for _, d := range got {
					mu.Lock()
					if other, held := holder[d.InboxID]; held {
						errs = append(errs, fmt.Errorf("%s leased by worker %d while worker %d held it", d.InboxID, w, other))
					}
					holder[d.InboxID] = w
					mu.Unlock()
				}
				for _, d := range got {
					mu.Lock()
					delete(holder, d.InboxID)
					mu.Unlock()
					if err := s.Ack(t.Context(), d.InboxID, req.LeaseToken, t0); err != nil {
						fail(fmt.Errorf("worker %d: Ack %s: %w", w, d.InboxID, err))
						continue
					}
					mu.Lock()
					acked[d.InboxID]++
					mu.Unlock()
				}
			}
		})
		for _, err := range errs {
			t.Error(err)
		}
		if len(acked) != deliveries {
			t.Errorf("%d deliveries acked, want %d", len(acked), deliveries)
		}
		for id, n := range acked {
			if n != 1 {
				t.Errorf("%s acked %d times, want once", id, n)
			}
		}
		wantIDs(t, lease(t, stores[0], leaseReq("after", t0.Add(48*time.Hour), 10)), "lease after the workers")
		wantStats(t, stores[1], "stats after the workers")
	})

	t.Run("concurrent leases of expired leases hand each delivery to one worker", func(t *testing.T) {
		const (
			deliveries = 30
			workers    = 8
		)
		open := h.reopenable(t)
		stores := []storage.Store{open(t), open(t), open(t)}
		createEndpoint(t, stores[0], newEndpoint("ep-1"))
		for i := range deliveries {
			deliver(t, stores[0], "ep-1", "ep-1", fmt.Sprintf("d%02d", i), at(time.Duration(i)*time.Millisecond))
		}
		crashed := leaseReq("crashed", t0, deliveries)
		if got := lease(t, stores[0], crashed); len(got) != deliveries {
			t.Fatalf("first lease: %d deliveries, want %d", len(got), deliveries)
		}

		expired := t0.Add(crashed.Visibility)
		got := make([][]storage.LeasedDelivery, workers)
		errs := make([]error, workers)
		race(workers, func(w int) {
			var result storage.LeaseResult
			result, errs[w] = stores[w%len(stores)].Lease(t.Context(), leaseReq(fmt.Sprintf("w%d", w), expired, 5))
			got[w] = result.Deliveries
		})
		leasedBy := map[string]int{}
		for w := range workers {
			must(t, errs[w], fmt.Sprintf("worker %d: Lease", w))
			for _, d := range got[w] {
				if other, twice := leasedBy[d.InboxID]; twice {
					t.Errorf("%s leased by workers %d and %d", d.InboxID, other, w)
				}
				leasedBy[d.InboxID] = w
				if d.Attempts != 2 || d.LeaseToken != fmt.Sprintf("w%d", w) || !d.PreviousLeaseExpired {
					t.Errorf("%s: attempts %d, token %q, previous lease expired %v; want 2, %q, true",
						d.InboxID, d.Attempts, d.LeaseToken, d.PreviousLeaseExpired, fmt.Sprintf("w%d", w))
				}
			}
		}
		// Eight workers taking up to five each can hold all thirty, and the first of them to
		// commit cannot have found fewer than five to take.
		if len(leasedBy) < 5 {
			t.Fatalf("%d deliveries leased again, want at least 5", len(leasedBy))
		}
		for id, w := range leasedBy {
			wantErr(t, stores[0].Ack(t.Context(), id, "crashed", expired), storage.ErrLeaseLost, "Ack of "+id+" by the crashed worker")
			ack(t, stores[1], id, fmt.Sprintf("w%d", w), expired)
		}
	})

	t.Run("hostile input", func(t *testing.T) { testInboxHostileInput(t, h) })
}

func testRetention(t *testing.T, h harness) {
	t0 := at(time.Hour)

	// settled makes a store with, on ep-1: five deliveries acked at t0 ("old-0" … "old-4"),
	// one acked an hour later ("recent"), and one each pending, leased and dead.
	settled := func(t *testing.T) storage.Store {
		t.Helper()
		s := inboxFixture(t, h)
		for i := range 5 {
			deliver(t, s, "ep-1", "ep-1", fmt.Sprintf("old-%d", i), at(time.Duration(i+1)*time.Second))
		}
		deliver(t, s, "ep-1", "ep-1", "recent", at(10*time.Second))
		deliver(t, s, "ep-1", "ep-1", "dead", at(11*time.Second))
		deliver(t, s, "ep-1", "ep-1", "leased", at(12*time.Second))
		deliver(t, s, "ep-1", "ep-1", "pending", at(13*time.Second))
		req := leaseReq("tok", t0, 8)
		req.Visibility = 24 * time.Hour
		wantIDs(t, lease(t, s, req), "lease", "old-0", "old-1", "old-2", "old-3", "old-4", "recent", "dead", "leased")
		for i := range 5 {
			ack(t, s, fmt.Sprintf("old-%d", i), "tok", t0)
		}
		ack(t, s, "recent", "tok", t0.Add(time.Hour))
		nack(t, s, "dead", "tok", t0, 1, t0)
		return s
	}
	sweep := func(t *testing.T, s storage.Store, req storage.SweepRequest) storage.SweepResult {
		t.Helper()
		res, err := s.Sweep(t.Context(), req)
		must(t, err, fmt.Sprintf("Sweep %+v", req))
		return res
	}

	t.Run("lookup through retention", func(t *testing.T) { testLookupThroughRetention(t, h, settled) })

	t.Run("old acked records go in batches, nothing else does", func(t *testing.T) {
		s := settled(t)
		// A zero ClaimsBefore keeps every claim.
		req := storage.SweepRequest{AckedBefore: t0.Add(time.Minute), Batch: 2}
		var calls []int64
		for range 10 {
			res := sweep(t, s, req)
			if res.ClaimsDeleted != 0 {
				t.Fatalf("Sweep deleted %d claims before ClaimsBefore", res.ClaimsDeleted)
			}
			calls = append(calls, res.InboxDeleted)
			if res.InboxDeleted < int64(req.Batch) {
				break
			}
		}
		if want := []int64{2, 2, 1}; !slices.Equal(calls, want) {
			t.Fatalf("inbox records deleted per Sweep call: %v, want %v", calls, want)
		}
		for i := range 5 {
			wantNoDelivery(t, s, fmt.Sprintf("old-%d", i))
		}
		for _, id := range []string{"recent", "dead", "leased", "pending"} {
			getDelivery(t, s, id)
		}
		wantCount(t, s, "", 4)
		if res := sweep(t, s, req); res != (storage.SweepResult{}) {
			t.Fatalf("Sweep with nothing left: %+v", res)
		}
		// The claims remain, so the swept deliveries are still duplicates.
		r := claim(t, s, newDelivery("ep-1", "ep-1", "evt-old-0", "again-0"))
		if r.Accepted || r.InboxID != "old-0" {
			t.Fatalf("claim of a swept delivery's identity: %+v, want the first claim", r)
		}
	})

	t.Run("claims go once their delivery is acked or gone, never while it is pending, leased or dead", func(t *testing.T) {
		s := settled(t)
		req := storage.SweepRequest{
			AckedBefore:  t0.Add(time.Minute),
			ClaimsBefore: at(10 * time.Second), // before "recent" was received
			Batch:        2,
		}
		var inbox, claims int64
		for calls := 0; ; calls++ {
			if calls == 10 {
				t.Fatal("Sweep did not finish in 10 calls")
			}
			res := sweep(t, s, req)
			inbox += res.InboxDeleted
			claims += res.ClaimsDeleted
			if res.InboxDeleted < int64(req.Batch) && res.ClaimsDeleted < int64(req.Batch) {
				break
			}
		}
		if inbox != 5 || claims != 5 {
			t.Fatalf("Sweep deleted %d inbox records and %d claims, want 5 and 5", inbox, claims)
		}
		// A swept claim frees its identity; a kept one still rejects duplicates.
		for i := range 5 {
			d := newDelivery("ep-1", "ep-1", fmt.Sprintf("evt-old-%d", i), fmt.Sprintf("again-%d", i))
			wantSame(t, acceptedBy(d), claim(t, s, d), "claim after its old claim was swept")
		}
		for _, id := range []string{"recent", "dead", "leased", "pending"} {
			r := claim(t, s, newDelivery("ep-1", "ep-1", "evt-"+id, "again-"+id))
			if r.Accepted || r.InboxID != id {
				t.Errorf("claim of %s's identity: %+v, want the first claim", id, r)
			}
		}

		// Once "recent" is old enough, its acked delivery and its claim go too.
		req = storage.SweepRequest{AckedBefore: t0.Add(2 * time.Hour), ClaimsBefore: t0, Batch: 10}
		wantSame(t, storage.SweepResult{InboxDeleted: 1, ClaimsDeleted: 1}, sweep(t, s, req), "second sweep")
	})

	t.Run("a claim swept while its acked delivery is kept frees its identity all the same", func(t *testing.T) {
		// Acked deliveries may be kept longer than claims (--inbox-retention above
		// --dedupe-window): past the window the event is new again, and its old record
		// stays until its own retention ends.
		s := settled(t)
		req := storage.SweepRequest{AckedBefore: t0, ClaimsBefore: at(20 * time.Second), Batch: 10}
		wantSame(t, storage.SweepResult{ClaimsDeleted: 6}, sweep(t, s, req), "sweep of claims only")
		for _, id := range []string{"old-0", "recent"} {
			d := newDelivery("ep-1", "ep-1", "evt-"+id, "again-"+id)
			wantSame(t, acceptedBy(d), claim(t, s, d), "claim of "+id+"'s identity after its claim was swept")
			wantSame(t, id, getDelivery(t, s, id).InboxID, "the earlier record")
			wantSame(t, d.InboxID, getDelivery(t, s, d.InboxID).InboxID, "the new record")
		}
		wantCount(t, s, "ep-1", 11)
	})

	t.Run("ClaimsFrom leaves the claims first received before it", func(t *testing.T) {
		s := settled(t)
		req := storage.SweepRequest{AckedBefore: t0, ClaimsBefore: at(20 * time.Second), ClaimsFrom: at(3 * time.Second), Batch: 10}
		wantSame(t, storage.SweepResult{ClaimsDeleted: 4}, sweep(t, s, req), "sweep from old-2's claim on") // old-2 to old-4, recent
		for i, swept := range []bool{false, false, true, true, true} {
			d := newDelivery("ep-1", "ep-1", fmt.Sprintf("evt-old-%d", i), fmt.Sprintf("again-%d", i))
			if r := claim(t, s, d); r.Accepted != swept {
				t.Fatalf("claim of old-%d's identity after the sweep from ClaimsFrom: %+v, want accepted %v", i, r, swept)
			}
		}
		req.ClaimsFrom = time.Time{}
		wantSame(t, storage.SweepResult{ClaimsDeleted: 2}, sweep(t, s, req), "sweep from the start") // old-0, old-1
	})

	t.Run("a delivery retried, or dead and requeued, goes by its ack, its claim not before", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "retried", at(time.Second))
		deliver(t, s, "ep-1", "ep-1", "requeued", at(2*time.Second))
		wantIDs(t, lease(t, s, leaseReq("tok-1", t0, 2)), "first lease", "retried", "requeued")
		nack(t, s, "retried", "tok-1", t0.Add(time.Hour), 3, t0)
		nack(t, s, "requeued", "tok-1", t0, 1, t0) // no attempts left: dead
		later := t0.Add(24 * time.Hour)
		all := storage.SweepRequest{AckedBefore: later, ClaimsBefore: later, Batch: 10}
		wantSame(t, storage.SweepResult{}, sweep(t, s, all), "sweep while one waits and one is dead")
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(time.Hour), 2)), "lease of the retry", "retried")
		ack(t, s, "retried", "tok-2", t0.Add(time.Hour+time.Second))
		must(t, s.Requeue(t.Context(), "requeued", t0.Add(2*time.Hour)), "Requeue")
		wantIDs(t, lease(t, s, leaseReq("tok-3", t0.Add(2*time.Hour), 2)), "lease of the requeued", "requeued")
		ack(t, s, "requeued", "tok-3", t0.Add(2*time.Hour+time.Second))

		// Only what was acked before AckedBefore goes, at exactly that time too.
		req := storage.SweepRequest{AckedBefore: t0.Add(time.Hour + time.Second), Batch: 10}
		wantSame(t, storage.SweepResult{}, sweep(t, s, req), "sweep at the first ack")
		req.AckedBefore = req.AckedBefore.Add(time.Microsecond)
		wantSame(t, storage.SweepResult{InboxDeleted: 1}, sweep(t, s, req), "sweep just after the first ack")
		wantNoDelivery(t, s, "retried")
		getDelivery(t, s, "requeued")
		wantSame(t, storage.SweepResult{InboxDeleted: 1, ClaimsDeleted: 2}, sweep(t, s, all), "sweep of the rest")
		for _, id := range []string{"retried", "requeued"} {
			d := newDelivery("ep-1", "ep-1", "evt-"+id, "again-"+id)
			wantSame(t, acceptedBy(d), claim(t, s, d), "claim of "+id+"'s identity after its claim was swept")
		}
	})

	t.Run("a delivery acked by a clock behind the one that leased it goes once both are past", func(t *testing.T) {
		// AckedBefore also bounds when the delivery was due (storage.SweepRequest), which is
		// before its lease and ack unless two instances' clocks disagree.
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "skewed", at(time.Second))
		wantIDs(t, lease(t, s, leaseReq("tok-1", t0, 1)), "first lease", "skewed")
		nack(t, s, "skewed", "tok-1", t0.Add(time.Hour), 3, t0)
		wantIDs(t, lease(t, s, leaseReq("tok-2", t0.Add(time.Hour), 1)), "lease of the retry", "skewed")
		ack(t, s, "skewed", "tok-2", t0.Add(30*time.Minute)) // the acking instance is 30 minutes behind
		req := storage.SweepRequest{AckedBefore: t0.Add(45 * time.Minute), Batch: 10}
		wantSame(t, storage.SweepResult{}, sweep(t, s, req), "sweep after the ack, before it was due")
		req.AckedBefore = t0.Add(time.Hour + time.Second)
		wantSame(t, storage.SweepResult{InboxDeleted: 1}, sweep(t, s, req), "sweep once past both")
	})
}

// manyEndpoints returns n ids of endpoints that do not exist.
func manyEndpoints(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("ep-none-%d", i)
	}
	return ids
}

// ackNow is when the acks of concurrentAcks run: within their leases.
var ackNow = at(time.Hour)

// ackCall is one ack of concurrentAcks and the error it should get.
type ackCall struct {
	inboxID, token string
	want           error
	// twin is the index of the same ack made twice at once: one of the two acks, the other
	// loses the lease it ended (-1 if none).
	twin int
}

// concurrentAcks leases 40 deliveries of ep-1 in four leases and returns acks of them to run
// at once at ackNow: one per delivery, and among them acks with a wrong token, with the token of
// another lease, of deliveries that do not exist, and the same ack twice.
func concurrentAcks(t *testing.T, s storage.Store) []ackCall {
	t.Helper()
	for i := range 40 {
		deliver(t, s, "ep-1", "ep-1", fmt.Sprintf("d%02d", i), at(time.Duration(i)*time.Millisecond))
	}
	var acks []ackCall
	for l := range 4 {
		token := fmt.Sprintf("tok-%d", l)
		for i, d := range lease(t, s, leaseReq(token, ackNow, 10)) {
			acks = append(acks, ackCall{d.InboxID, token, nil, -1})
			switch i {
			case 0:
				acks = append(acks, ackCall{d.InboxID, "not-" + token, storage.ErrLeaseLost, -1})
			case 1:
				acks = append(acks, ackCall{d.InboxID, fmt.Sprintf("tok-%d", (l+1)%4), storage.ErrLeaseLost, -1})
			case 2:
				acks[len(acks)-1].twin = len(acks)
				acks = append(acks, ackCall{d.InboxID, token, nil, len(acks) - 1})
			}
		}
	}
	for i := range 5 {
		acks = append(acks, ackCall{fmt.Sprintf("missing-%d", i), "tok-0", storage.ErrNotFound, -1})
	}
	return acks
}

// checkConcurrentAcks checks the answers errs to the acks of concurrentAcks, and that they
// left nothing unfinished.
func checkConcurrentAcks(t *testing.T, s storage.Store, acks []ackCall, errs []error) {
	t.Helper()
	for i, a := range acks {
		if a.twin >= 0 {
			if i < a.twin && (errs[i] == nil) == (errs[a.twin] == nil) {
				t.Errorf("the same Ack(%s, %s) twice = %v and %v, want one nil and one lease lost", a.inboxID, a.token, errs[i], errs[a.twin])
			}
			if errs[i] != nil {
				wantErr(t, errs[i], storage.ErrAlreadyAcked, "the second of the same Ack "+a.inboxID)
			}
			continue
		}
		if (a.want == nil) != (errs[i] == nil) || (a.want != nil && !errors.Is(errs[i], a.want)) {
			t.Errorf("Ack(%s, %s) = %v, want %v", a.inboxID, a.token, errs[i], a.want)
		}
	}
	wantStats(t, s, "stats after the acks")
}

// CommitBatching shows a test how a store group-commits one kind of write (acks, leases).
type CommitBatching struct {
	// Block makes every write to the inbox wait until release is called.
	Block func(t *testing.T) (release func())
	// Batches counts the transactions of that kind committed; Waiting counts the calls
	// waiting for their outcome, queued or committing.
	Batches func() int64
	Waiting func() int
}

// AcksShareCommits checks that concurrent acks on the store share commits and are still each
// answered alone: it runs the acks of concurrentAcks while b.Block holds the inbox, so that the
// first batch waits and every other ack queues behind it, then releases it and expects at most
// two commits. s must be empty.
func AcksShareCommits(t *testing.T, s storage.Store, b CommitBatching) {
	t.Helper()
	for _, e := range []string{"ep-1", "ep-2", "ep-3"} {
		createEndpoint(t, s, newEndpoint(e))
	}
	acks := concurrentAcks(t, s)
	errs := make([]error, len(acks))
	commits := whileBlocked(t, b, len(acks), "acks", func(i int) {
		errs[i] = s.Ack(t.Context(), acks[i].inboxID, acks[i].token, ackNow)
	})
	checkConcurrentAcks(t, s, acks, errs)
	// Two, unless the batch that waited had taken every ack already.
	if commits < 1 || commits > 2 {
		t.Errorf("%d acks took %d commits, want 2 (or 1)", len(acks), commits)
	}
}

// whileBlocked runs call(i) for every i below n at once while b.Block holds the inbox, waits
// until all n wait for their outcome (the first batch waiting, the others queued behind it),
// then releases the inbox, waits for the calls and returns how many batches they committed.
func whileBlocked(t *testing.T, b CommitBatching, n int, what string, call func(i int)) (commits int64) {
	t.Helper()
	release := b.Block(t)
	before := b.Batches()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { call(i) })
	}
	waitQueued(t, b, n, what, release, &wg)
	release()
	wg.Wait()
	return b.Batches() - before
}

// leaseRefs returns what AckMany takes for the acks.
func leaseRefs(acks []ackCall) []storage.LeaseRef {
	refs := make([]storage.LeaseRef, len(acks))
	for i, a := range acks {
		refs[i] = storage.LeaseRef{InboxID: a.inboxID, LeaseToken: a.token}
	}
	return refs
}

// AckManySharesOneCommit checks that the acks of one AckMany call, fewer than a batch holds,
// commit together: the acks of concurrentAcks take one commit (concurrent Ack calls take at
// least two: the first leads a batch of its own at once). s must be empty.
func AckManySharesOneCommit(t *testing.T, s storage.Store, b CommitBatching) {
	t.Helper()
	for _, e := range []string{"ep-1", "ep-2", "ep-3"} {
		createEndpoint(t, s, newEndpoint(e))
	}
	acks := concurrentAcks(t, s)
	before := b.Batches()
	checkConcurrentAcks(t, s, acks, s.AckMany(t.Context(), leaseRefs(acks), ackNow))
	if commits := b.Batches() - before; commits != 1 {
		t.Errorf("one AckMany of %d acks took %d commits, want 1", len(acks), commits)
	}
}

// LeasesShareCommits checks that concurrent leases on the store share commits and still each
// lease as if alone: it runs nine leases, filtered by endpoint or not, while b.Block holds the
// inbox, so that the first batch waits and the others queue behind it, then releases it. Each
// lease must get exactly its Max (there are enough deliveries whatever their order), only of
// the endpoints it asked for, no delivery may be leased twice, the inbox's counts must add up,
// and the nine may take at most two commits. s must be empty.
func LeasesShareCommits(t *testing.T, s storage.Store, b CommitBatching) {
	t.Helper()
	// Unfiltered leases take 6 deliveries of any endpoint, so ep-2 and ep-3 have 6 more than
	// their own leases take.
	delivered := map[string]int{"ep-1": 6, "ep-2": 15, "ep-3": 18}
	n := 0
	for _, e := range []string{"ep-1", "ep-2", "ep-3"} {
		createEndpoint(t, s, newEndpoint(e))
		for range delivered[e] {
			deliver(t, s, e, e, fmt.Sprintf("d%02d", n), at(time.Duration(n)*time.Millisecond))
			n++
		}
	}
	reqs := make([]storage.LeaseRequest, 9)
	for l := range reqs {
		reqs[l] = leaseReq(fmt.Sprintf("tok-%d", l), ackNow, 2+l%3)
		if l%3 != 0 {
			reqs[l].InboxFilter = storage.InboxFilter{EndpointIDs: []string{fmt.Sprintf("ep-%d", l%3+1)}}
		}
	}
	results := make([]storage.LeaseResult, len(reqs))
	errs := make([]error, len(reqs))
	commits := whileBlocked(t, b, len(reqs), "leases", func(l int) {
		results[l], errs[l] = s.Lease(t.Context(), reqs[l])
	})

	leasedBy := map[string]string{} // inbox id → lease token
	leased := map[string]int64{}    // endpoint id → deliveries leased
	for l, req := range reqs {
		if errs[l] != nil {
			t.Errorf("Lease %s: %v", req.LeaseToken, errs[l])
			continue
		}
		got := results[l].Deliveries
		if len(got) != req.Max {
			t.Errorf("Lease %s (Max %d, %v) leased %d deliveries", req.LeaseToken, req.Max, req.EndpointIDs, len(got))
		}
		for _, d := range got {
			if other, twice := leasedBy[d.InboxID]; twice {
				t.Errorf("%s leased by %s and by %s", d.InboxID, other, req.LeaseToken)
			}
			leasedBy[d.InboxID] = req.LeaseToken
			leased[d.EndpointID]++
			if len(req.EndpointIDs) > 0 && d.EndpointID != req.EndpointIDs[0] {
				t.Errorf("Lease %s for %v leased %s of %s", req.LeaseToken, req.EndpointIDs, d.InboxID, d.EndpointID)
			}
			if d.LeaseToken != req.LeaseToken || d.Attempts != 1 || d.PreviousLeaseExpired {
				t.Errorf("Lease %s: %s leased with token %q, attempt %d, previous lease expired %v",
					req.LeaseToken, d.InboxID, d.LeaseToken, d.Attempts, d.PreviousLeaseExpired)
			}
		}
	}
	stats := inboxStats(t, s)
	if len(stats) != len(delivered) {
		t.Errorf("stats after the leases: %+v, want one for each of %d endpoints", stats, len(delivered))
	}
	for _, st := range stats {
		pending := int64(delivered[st.EndpointID]) - leased[st.EndpointID]
		if st.Pending != pending || st.Leased != leased[st.EndpointID] || st.Dead != 0 {
			t.Errorf("stats of %s after the leases: %+v, want %d pending and %d leased", st.EndpointID, st, pending, leased[st.EndpointID])
		}
	}
	// Two, unless the batch that waited had taken every lease already.
	if commits < 1 || commits > 2 {
		t.Errorf("%d leases took %d commits, want 2 (or 1)", len(reqs), commits)
	}
}

// LeaseTakenWhenItsBatchRuns checks that a lease with a clock reads it when its batch runs,
// not when it was queued: b.Block holds the inbox so that a first lease waits and a second
// queues behind it; the clock moves on before the release, and the second lease must last its
// visibility from the clock's new time. s must be empty.
func LeaseTakenWhenItsBatchRuns(t *testing.T, s storage.Store, b CommitBatching) {
	t.Helper()
	for _, e := range []string{"ep-1", "ep-2"} {
		createEndpoint(t, s, newEndpoint(e))
	}
	deliver(t, s, "ep-1", "ep-1", "first", at(0))
	deliver(t, s, "ep-2", "ep-2", "queued", at(time.Millisecond))
	var mu sync.Mutex
	now := ackNow
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	forEndpoint := func(token, endpointID string) storage.LeaseRequest {
		req := leaseOf(token, endpointID)
		req.Clock = clock
		return req
	}
	release := b.Block(t)
	var wg sync.WaitGroup
	waitFor := func(n int) { waitQueued(t, b, n, "leases", release, &wg) }
	wg.Go(func() { _, _ = s.Lease(t.Context(), forEndpoint("tok-first", "ep-1")) })
	waitFor(1)
	req := forEndpoint("tok-queued", "ep-2")
	var got storage.LeaseResult
	var err error
	wg.Go(func() { got, err = s.Lease(t.Context(), req) })
	waitFor(2)
	mu.Lock()
	now = now.Add(10 * time.Minute)
	ran := now
	mu.Unlock()
	release()
	wg.Wait()
	must(t, err, "Lease of the queued lease")
	if len(got.Deliveries) != 1 || !got.Deliveries[0].LeasedUntil.Equal(ran.Add(req.Visibility)) {
		t.Fatalf("the queued lease: %+v; want its delivery leased until %s, its visibility from when its batch ran",
			got, fmtTime(ran.Add(req.Visibility)))
	}
}

// ExtensionTakenWhenItRuns checks that an extension with a clock reads it when its statement
// runs, not when it was called: block holds what the extension has to wait for (the writer, the
// connections) until the function it returns is called; the clock moves on before the release,
// and the lease must last its visibility from the clock's new time, and the end returned be
// the one stored. s must be empty.
func ExtensionTakenWhenItRuns(t *testing.T, s storage.Store, block func(t *testing.T) func()) {
	t.Helper()
	createEndpoint(t, s, newEndpoint("ep-1"))
	deliver(t, s, "ep-1", "ep-1", "d1", at(0))
	wantIDs(t, lease(t, s, leaseOf("tok-1", "ep-1")), "lease of d1", "d1")
	var mu sync.Mutex
	now := ackNow
	req := storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: "d1", LeaseToken: "tok-1"},
		Visibility: 5 * time.Minute, Now: now, Clock: func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}}
	release := block(t)
	var got time.Time
	var err error
	var wg sync.WaitGroup
	wg.Go(func() { got, err = s.ExtendLease(t.Context(), req) })
	// Nothing tells when the extension waits; one that reads the clock before its wait has
	// read it by then.
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	now = now.Add(30 * time.Second) // the lease of a minute is still live
	until := now.Add(req.Visibility)
	mu.Unlock()
	release()
	wg.Wait()
	must(t, err, "ExtendLease that waited")
	if !got.Equal(until) {
		t.Errorf("the extension that waited returned %s; want %s, its visibility from when it ran", fmtTime(got), fmtTime(until))
	}
	wantStats(t, s, "stats after the extension that waited", storage.EndpointInboxStats{EndpointID: "ep-1", Leased: 1, EarliestLeaseEnd: until})
}

// leaseOf is a lease of one delivery of endpointID, at ackNow.
func leaseOf(token, endpointID string) storage.LeaseRequest {
	req := leaseReq(token, ackNow, 1)
	req.InboxFilter = storage.InboxFilter{EndpointIDs: []string{endpointID}}
	return req
}

// waitQueued waits until n calls (what they are) wait on b's inbox, held by release; after
// 10 s it lets them go, waits for wg and fails.
func waitQueued(t *testing.T, b CommitBatching, n int, what string, release func(), wg *sync.WaitGroup) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); b.Waiting() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			release()
			wg.Wait()
			t.Fatalf("%d %s waiting, want %d", b.Waiting(), what, n)
		}
	}
}

// UnreadableRecordFailsItsLeaseAlone checks that a lease meeting a record it cannot read back
// fails alone, with storage.ErrUnreadable, while a lease of another endpoint sharing its batch
// gets its delivery. corrupt makes the stored record of an inbox id unreadable (its encoded
// headers). b.Block holds the inbox so that a first lease waits and the two queue behind it,
// into one batch. s must be empty.
func UnreadableRecordFailsItsLeaseAlone(t *testing.T, s storage.Store, b CommitBatching, corrupt func(t *testing.T, inboxID string)) {
	t.Helper()
	for _, e := range []string{"ep-1", "ep-2", "ep-3"} {
		createEndpoint(t, s, newEndpoint(e))
	}
	deliver(t, s, "ep-1", "ep-1", "good", at(0))
	deliver(t, s, "ep-2", "ep-2", "bad", at(time.Millisecond))
	deliver(t, s, "ep-3", "ep-3", "first", at(2*time.Millisecond))
	corrupt(t, "bad")
	forEndpoint := leaseOf
	release := b.Block(t)
	var wg sync.WaitGroup
	waitFor := func(n int) { waitQueued(t, b, n, "leases", release, &wg) }
	wg.Go(func() { _, _ = s.Lease(t.Context(), forEndpoint("tok-first", "ep-3")) })
	waitFor(1)
	var good, bad storage.LeaseResult
	var goodErr, badErr error
	wg.Go(func() { good, goodErr = s.Lease(t.Context(), forEndpoint("tok-good", "ep-1")) })
	wg.Go(func() { bad, badErr = s.Lease(t.Context(), forEndpoint("tok-bad", "ep-2")) })
	waitFor(3)
	release()
	wg.Wait()
	if goodErr != nil || len(good.Deliveries) != 1 || good.Deliveries[0].InboxID != "good" || good.Deliveries[0].LeaseToken != "tok-good" {
		t.Errorf("the lease of ep-1, sharing a batch with one that met an unreadable record: %+v, %v", good, goodErr)
	}
	if !errors.Is(badErr, storage.ErrUnreadable) || len(bad.Deliveries) != 0 {
		t.Errorf("the lease that met the unreadable record: %+v, %v; want an error wrapping ErrUnreadable", bad, badErr)
	}
	// Its batchmate's delivery is leased, and acks.
	must(t, s.Ack(t.Context(), "good", "tok-good", ackNow), "Ack of the batchmate's delivery")
}

// claimSized claims deliveries d1, d2, ... of ep-1, received a second apart, with bodies of
// the given lengths, and returns the size of each as MaxBytes counts it: its body, headers (as
// stored) and URL.
func claimSized(t *testing.T, s storage.Store, bodies ...int) []int64 {
	t.Helper()
	var sizes []int64
	for i, n := range bodies {
		d := newDelivery("ep-1", "ep-1", fmt.Sprintf("evt-d%d", i+1), fmt.Sprintf("d%d", i+1))
		d.Body = []byte(strings.Repeat("x", n))
		d.ReceivedAt = at(time.Duration(i+1) * time.Second)
		if r := claim(t, s, d); !r.Accepted {
			t.Fatalf("Claim %s: not accepted: %+v", d.InboxID, r)
		}
		sizes = append(sizes, int64(len(d.Body)+len(storage.EncodeHeaders(d.Headers))+len(d.URL)))
	}
	return sizes
}

// SettleDeadLettersAudited checks that Requeue and Discard record the audit event their
// context carries, naming the endpoint of the delivery they changed, in the transaction of
// the change: a settle that changes nothing records nothing, and one whose event cannot be
// recorded changes nothing. s must be empty.
func SettleDeadLettersAudited(t *testing.T, s storage.Store) {
	t.Helper()
	t0 := at(time.Hour)
	createEndpoint(t, s, newEndpoint("ep-1"))
	createEndpoint(t, s, newEndpoint("ep-2"))
	deliver(t, s, "ep-1", "ep-1", "d1", at(1*time.Second))
	deliver(t, s, "ep-1", "ep-1", "pending", t0.Add(time.Hour))
	deliver(t, s, "ep-2", "ep-2", "e1", at(2*time.Second))
	wantIDs(t, lease(t, s, leaseReq("tok-1", t0, 2)), "lease", "d1", "e1")
	nack(t, s, "d1", "tok-1", t0, 1, t0)
	nack(t, s, "e1", "tok-1", t0, 1, t0)
	with := func(ev storage.AuditEvent) context.Context { return storage.WithAuditEvent(t.Context(), ev) }

	wantErr(t, s.Requeue(with(auditEvent("x1", "inbox.requeue", "", "", at(time.Minute))), "pending", t0),
		storage.ErrNotFound, "Requeue of a pending delivery")
	wantErr(t, s.Discard(with(auditEvent("x2", "inbox.discard", "", "", at(time.Minute))), "nope", "discarded: why", t0),
		storage.ErrNotFound, "Discard of an unknown delivery")
	wantErr(t, s.Discard(with(storage.AuditEvent{ID: "x3"}), "e1", "discarded: why", t0),
		storage.ErrInvalid, "Discard with an event without action")
	wantIDs(t, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters after the failed settles", "d1", "e1")

	requeue := auditEvent("a1", "inbox.requeue", "", "", at(time.Minute))
	must(t, s.Requeue(with(requeue), "d1", t0.Add(time.Minute)), "Requeue")
	discard := auditEvent("a2", "inbox.discard", "ep-1", "", at(2*time.Minute))
	must(t, s.Discard(with(discard), "e1", "discarded: poison", t0.Add(2*time.Minute)), "Discard")
	// The store names the endpoint whose delivery changed, whatever the caller said.
	requeue.EndpointID, discard.EndpointID = "ep-1", "ep-2"
	wantSame(t, []storage.AuditEvent{requeue, discard}, listAudit(t, s, storage.AuditFilter{Limit: 10}), "audit events")
	wantIDs(t, deadLetters(t, s, storage.InboxFilter{}, 10), "dead letters after the settles")
}

// testLookupThroughRetention: LookupClaim must answer as Claim would (storage.ClaimStore), and
// the server answers DUPLICATE from it while backpressure refuses new events. The claim, not
// the inbox record, decides: a lookup that found an acked record whose claim was swept would
// tell the provider DUPLICATE for an event past the dedupe window, which it then drops for
// good; one that missed a claim whose record was swept would refuse a redelivery.
func testLookupThroughRetention(t *testing.T, h harness, settled func(t *testing.T) storage.Store) {
	t0 := at(time.Hour)
	// old is the delivery "old-0" of settled, as claimed.
	old := newDelivery("ep-1", "ep-1", "evt-old-0", "old-0")
	old.ReceivedAt = at(time.Second)

	t.Run("lookup misses a swept claim whose acked record is kept", func(t *testing.T) {
		s := settled(t)
		req := storage.SweepRequest{AckedBefore: t0, ClaimsBefore: at(20 * time.Second), Batch: 10}
		if res, err := s.Sweep(t.Context(), req); err != nil || res.InboxDeleted != 0 || res.ClaimsDeleted == 0 {
			t.Fatalf("Sweep of claims only: %+v, %v", res, err)
		}
		getDelivery(t, s, "old-0")
		_, err := s.LookupClaim(t.Context(), "ep-1", "evt-old-0")
		wantErr(t, err, storage.ErrNotFound, "LookupClaim of a swept claim whose record is kept")
		// A kept claim is still found, as Claim would report it.
		got, err := s.LookupClaim(t.Context(), "ep-1", "evt-dead")
		must(t, err, "LookupClaim of a dead delivery's claim")
		if got.Accepted || got.InboxID != "dead" {
			t.Fatalf("LookupClaim of a dead delivery's claim = %+v, want its first claim", got)
		}
	})

	t.Run("lookup finds a kept claim whose record was swept", func(t *testing.T) {
		s := settled(t)
		req := storage.SweepRequest{AckedBefore: t0.Add(time.Minute), Batch: 10}
		if res, err := s.Sweep(t.Context(), req); err != nil || res.InboxDeleted == 0 || res.ClaimsDeleted != 0 {
			t.Fatalf("Sweep of records only: %+v, %v", res, err)
		}
		wantNoDelivery(t, s, "old-0")
		got, err := s.LookupClaim(t.Context(), "ep-1", "evt-old-0")
		must(t, err, "LookupClaim of a kept claim whose record was swept")
		wantSame(t, rejectedFor(old), got, "looked-up claim")
		again := newDelivery("ep-1", "ep-1", "evt-old-0", "again-0")
		wantSame(t, got, claim(t, s, again), "Claim's answer beside LookupClaim's")
	})
}

// testLeaseBytesAcrossEndpoints: MaxBytes bounds a lease as a whole (storage.LeaseRequest),
// also when its filter names several endpoints and a store picks each endpoint's deliveries
// apart (storage.InboxFilter.ByEndpoint) before merging them: bounded per endpoint, the
// answer could pass the worker's receive limit, and its every delivery would stay leased,
// unrun, an attempt spent.
func testLeaseBytesAcrossEndpoints(t *testing.T, h harness) {
	t0 := at(time.Hour)
	s := inboxFixture(t, h)
	body := make([]byte, 1000)
	var size int64
	for i, e := range []string{"ep-1", "ep-2", "ep-1", "ep-2"} {
		d := newDelivery(e, e, "evt-"+string(rune('a'+i)), string(rune('a'+i)))
		d.Body, d.ReceivedAt = body, at(time.Duration(i+1)*time.Second)
		if r := claim(t, s, d); !r.Accepted {
			t.Fatalf("Claim %s: not accepted: %+v", d.InboxID, r)
		}
		size = int64(len(d.Body) + len(storage.EncodeHeaders(d.Headers)) + len(d.URL))
	}
	req := leaseReq("tok-1", t0, 10)
	req.EndpointIDs = []string{"ep-2", "ep-1"}
	req.MaxBytes = 2*size + size/2 // two fit, not three
	wantIDs(t, lease(t, s, req), "lease of two endpoints within MaxBytes", "a", "b")
	req.LeaseToken, req.MaxBytes = "tok-2", 1
	wantIDs(t, lease(t, s, req), "lease of two endpoints bounded below the oldest's size", "c")
}
