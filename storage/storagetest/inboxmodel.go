package storagetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// inboxModelDelivery is what followInboxModel expects of one delivery.
type inboxModelDelivery struct {
	id, endpoint string
	state        string
	attempts     int
	token        string
	leasedUntil  time.Time
	visibleAt    time.Time
	ackedAt      time.Time
}

// followInboxModel drives s through random claims, leases, acks, nacks, give-backs,
// extensions, requeues, discards and sweeps at a clock that moves on, and checks every answer
// and the stats against a model of the inbox's documented rules: no delivery leased twice at
// once, MaxAttempts leases then dead, a nack's retry honoured, requeue only of dead ones,
// retention only of acked ones.
func followInboxModel(t *testing.T, s storage.Store, seed uint64, steps int) {
	t.Helper()
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(seed, seed))
	const maxAttempts, visibility = 3, 30 * time.Second
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	model := map[string]*inboxModelDelivery{}
	var order []string
	n := 0
	pick := func(states ...string) *inboxModelDelivery {
		var c []*inboxModelDelivery
		for _, id := range order {
			if d := model[id]; d != nil && slices.Contains(states, d.state) {
				c = append(c, d)
			}
		}
		if len(c) == 0 {
			return nil
		}
		return c[rng.IntN(len(c))]
	}
	for step := 0; step < steps; step++ {
		now = now.Add(time.Duration(rng.IntN(20000)) * time.Millisecond)
		switch op := rng.IntN(10); op {
		case 0, 1:
			n++
			id := fmt.Sprintf("in-%04d", n)
			ep := []string{"ep-1", "ep-2"}[rng.IntN(2)]
			d := storage.Delivery{InboxID: id, Scope: ep, EventID: "evt-" + id, EndpointID: ep, OperationKey: "op-" + id,
				SecretID: "sec-1", Method: "POST", URL: "https://h.example/" + ep, Body: []byte("{}"), ReceivedAt: now}
			r, err := s.Claim(ctx, d)
			if err != nil || !r.Accepted {
				t.Fatalf("step %d: Claim %s: %+v %v", step, id, r, err)
			}
			model[id] = &inboxModelDelivery{id: id, endpoint: ep, state: storage.StatePending, visibleAt: now}
			order = append(order, id)
		case 2, 3:
			max := 1 + rng.IntN(3)
			token := fmt.Sprintf("tok-%d", step)
			var filter storage.InboxFilter
			switch rng.IntN(4) {
			case 1:
				filter.EndpointIDs = []string{"ep-1"}
			case 2:
				filter.EndpointIDs = []string{"ep-2", "ep-3", "ep-2"}
			case 3:
				filter.Scopes = []string{"ep-2"}
			}
			matches := func(d *inboxModelDelivery) bool {
				return (len(filter.EndpointIDs) == 0 || slices.Contains(filter.EndpointIDs, d.endpoint)) &&
					(len(filter.Scopes) == 0 || slices.Contains(filter.Scopes, d.endpoint))
			}
			res, err := s.Lease(ctx, storage.LeaseRequest{InboxFilter: filter, Max: max, Visibility: visibility, MaxAttempts: maxAttempts, LeaseToken: token, Now: now})
			if err != nil {
				t.Fatalf("step %d: Lease: %v", step, err)
			}
			var toDead int64
			var cands []*inboxModelDelivery
			for _, id := range order {
				d := model[id]
				if d == nil || !matches(d) {
					continue
				}
				if d.state == storage.StateLeased && !d.leasedUntil.After(now) && d.attempts >= maxAttempts {
					d.state, d.token = storage.StateDead, ""
					toDead++
				}
				if d.attempts < maxAttempts && ((d.state == storage.StatePending && !d.visibleAt.After(now)) ||
					(d.state == storage.StateLeased && !d.leasedUntil.After(now))) {
					cands = append(cands, d)
				}
			}
			slices.SortStableFunc(cands, func(a, b *inboxModelDelivery) int {
				if c := a.visibleAt.Compare(b.visibleAt); c != 0 {
					return c
				}
				return strings.Compare(a.id, b.id)
			})
			if len(cands) > max {
				cands = cands[:max]
			}
			if res.ExpiredToDead != toDead {
				t.Fatalf("step %d: Lease ExpiredToDead %d, model %d", step, res.ExpiredToDead, toDead)
			}
			if len(res.Deliveries) != len(cands) {
				t.Fatalf("step %d: Lease got %d deliveries, model %d", step, len(res.Deliveries), len(cands))
			}
			for i, got := range res.Deliveries {
				d := cands[i]
				d.state, d.token, d.leasedUntil = storage.StateLeased, token, now.Add(visibility)
				d.attempts++
				if got.InboxID != d.id || got.Attempts != d.attempts || got.OperationKey != "op-"+d.id || !got.LeasedUntil.Equal(d.leasedUntil) {
					t.Fatalf("step %d: Lease[%d] = %s attempt %d key %s until %s; model %s attempt %d until %s",
						step, i, got.InboxID, got.Attempts, got.OperationKey, got.LeasedUntil, d.id, d.attempts, d.leasedUntil)
				}
			}
		case 4, 5, 6:
			d := pick(storage.StateLeased, storage.StateAcked, storage.StateDead, storage.StatePending)
			if d == nil {
				continue
			}
			token := d.token
			if token == "" || rng.IntN(5) == 0 {
				token = "tok-stale"
			}
			live := d.state == storage.StateLeased && d.token == token && d.leasedUntil.After(now)
			wantErr := func(err error, what string) {
				t.Helper()
				switch {
				case live && err != nil:
					t.Fatalf("step %d: %s of live lease %s: %v", step, what, d.id, err)
				case !live && d.state == storage.StateAcked && !errors.Is(err, storage.ErrAlreadyAcked):
					t.Fatalf("step %d: %s of acked %s: %v, want ErrAlreadyAcked", step, what, d.id, err)
				case !live && d.state != storage.StateAcked && !errors.Is(err, storage.ErrLeaseLost):
					t.Fatalf("step %d: %s of %s (%s, token %s vs %s, until %s, now %s): %v, want ErrLeaseLost",
						step, what, d.id, d.state, token, d.token, d.leasedUntil, now, err)
				}
			}
			switch rng.IntN(4) {
			case 0:
				wantErr(s.Ack(ctx, d.id, token, now), "Ack")
				if live {
					d.state, d.token, d.ackedAt = storage.StateAcked, "", now
				}
			case 1:
				retry := now.Add(time.Duration(rng.IntN(60)) * time.Second)
				dead, err := s.Nack(ctx, d.id, token, retry, maxAttempts, "boom", now)
				wantErr(err, "Nack")
				if live {
					d.token = ""
					if d.attempts >= maxAttempts {
						d.state = storage.StateDead
					} else {
						d.state, d.visibleAt = storage.StatePending, retry
					}
					if dead != (d.state == storage.StateDead) {
						t.Fatalf("step %d: Nack dead=%v, model %s", step, dead, d.state)
					}
				}
			case 2:
				retry := now.Add(time.Duration(rng.IntN(60)) * time.Second)
				wantErr(s.GiveBack(ctx, d.id, token, retry, "stopping", now), "GiveBack")
				if live {
					d.state, d.token, d.visibleAt = storage.StatePending, "", retry
					d.attempts--
				}
			case 3:
				until, err := s.ExtendLease(ctx, storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: d.id, LeaseToken: token},
					Visibility: visibility, Now: now})
				wantErr(err, "ExtendLease")
				if live {
					d.leasedUntil = now.Add(visibility)
					if !until.Equal(d.leasedUntil) {
						t.Fatalf("step %d: ExtendLease until %s, want %s", step, until, d.leasedUntil)
					}
				}
			}
		case 7:
			d := pick(storage.StateDead, storage.StateLeased, storage.StatePending, storage.StateAcked)
			if d == nil {
				continue
			}
			if rng.IntN(2) == 0 {
				err := s.Requeue(ctx, d.id, now)
				if (d.state == storage.StateDead) != (err == nil) {
					t.Fatalf("step %d: Requeue of %s %s: %v", step, d.state, d.id, err)
				}
				if err == nil {
					d.state, d.attempts, d.visibleAt = storage.StatePending, 0, now
				}
			} else {
				err := s.Discard(ctx, d.id, "no", now)
				if (d.state == storage.StateDead) != (err == nil) {
					t.Fatalf("step %d: Discard of %s %s: %v", step, d.state, d.id, err)
				}
				if err == nil {
					d.state, d.ackedAt = storage.StateAcked, now
				}
			}
		case 8:
			cut := now.Add(-time.Minute)
			res, err := s.Sweep(ctx, storage.SweepRequest{AckedBefore: cut, ClaimsBefore: cut, Batch: 1000})
			if err != nil {
				t.Fatalf("step %d: Sweep: %v", step, err)
			}
			var want int64
			for id, d := range model {
				if d.state == storage.StateAcked && d.ackedAt.Before(cut) && d.visibleAt.Before(cut) {
					delete(model, id)
					want++
				}
			}
			if res.InboxDeleted != want {
				t.Fatalf("step %d: Sweep deleted %d, model %d", step, res.InboxDeleted, want)
			}
		case 9:
			stats, err := s.InboxStats(ctx)
			if err != nil {
				t.Fatalf("step %d: InboxStats: %v", step, err)
			}
			want := map[string]*storage.EndpointInboxStats{}
			for _, id := range order {
				d := model[id]
				if d == nil || d.state == storage.StateAcked {
					continue
				}
				st := want[d.endpoint]
				if st == nil {
					st = &storage.EndpointInboxStats{EndpointID: d.endpoint}
					want[d.endpoint] = st
				}
				switch d.state {
				case storage.StatePending:
					st.Pending++
					if st.OldestPendingAt.IsZero() || d.visibleAt.Before(st.OldestPendingAt) {
						st.OldestPendingAt = d.visibleAt
					}
				case storage.StateLeased:
					st.Leased++
					if st.EarliestLeaseEnd.IsZero() || d.leasedUntil.Before(st.EarliestLeaseEnd) {
						st.EarliestLeaseEnd = d.leasedUntil
					}
				case storage.StateDead:
					st.Dead++
				}
			}
			for _, got := range stats {
				w := want[got.EndpointID]
				if w == nil {
					w = &storage.EndpointInboxStats{EndpointID: got.EndpointID}
				}
				if got.Pending != w.Pending || got.Leased != w.Leased || got.Dead != w.Dead ||
					!got.OldestPendingAt.Equal(w.OldestPendingAt) || !got.EarliestLeaseEnd.Equal(w.EarliestLeaseEnd) {
					t.Fatalf("step %d: stats %+v, model %+v", step, got, *w)
				}
				delete(want, got.EndpointID)
			}
			for _, w := range want {
				if w.Pending+w.Leased+w.Dead > 0 {
					t.Fatalf("step %d: stats miss %+v", step, *w)
				}
			}
		}
	}
}
