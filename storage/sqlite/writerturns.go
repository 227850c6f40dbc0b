package sqlite

import (
	"context"
	"slices"
	"sync"
	"time"
)

// claimPatience is how long a claim batch waiting for the writer lets other transactions go
// first (writerTurns). Measured with 16 drain workers on a store of 70,000 deliveries, against
// 5 ms and no patience at all (BENCHMARKS.md, sixth session): at 2,500 new events/s 2 ms kept
// both intake (p99 22 ms) and the drain up; 5 ms let intake fall behind at 3,500/s; none gave
// intake so many small commits that the drain fell behind at 2,500/s.
const claimPatience = 2 * time.Millisecond

// writerTurns decides which transaction gets the one writer connection next. database/sql
// hands a freed connection to a random waiter, and intake is only ever one waiter: the claim
// batch in line, which carries every new delivery queued behind it. With 16 workers leasing
// and acking it got about one turn in 17, and once the workers acked in batches and cycled
// faster, new events waited for seconds (BENCHMARKS.md, sixth session).
//
// Here other transactions (leases, ack batches, the rest) go in the order they came, and a
// waiting claim batch takes the next turn once it has waited patience, or at once when no
// other transaction waits; between two claim batches at least one other transaction goes.
// Intake then waits for the writer about patience plus one transaction, however many workers
// wait, and the claims that gather meanwhile share its commit; the drain cannot be starved by
// a steady intake either.
//
// The zero value is ready to use, with no patience: claim batches and the others alternate.
// Only transactions go through it; the writer connection is otherwise used for preparing
// statements, which database/sql queues on its own.
type writerTurns struct {
	patience time.Duration

	mu   sync.Mutex
	busy bool
	// lastWasClaim says whether the turn in progress (or the last one) is a claim batch's.
	lastWasClaim bool
	claims       []waiter
	others       []waiter
}

type waiter struct {
	turn  chan struct{}
	since time.Time
}

// acquire waits for the writer's turn: the caller then has the writer connection to itself
// until it calls release. It fails with ctx's error only if ctx ends first, without the turn.
func (w *writerTurns) acquire(ctx context.Context, claim bool) error {
	w.mu.Lock()
	if !w.busy {
		w.busy, w.lastWasClaim = true, claim
		w.mu.Unlock()
		return nil
	}
	me := waiter{turn: make(chan struct{}), since: time.Now()}
	queue := &w.others
	if claim {
		queue = &w.claims
	}
	*queue = append(*queue, me)
	w.mu.Unlock()
	select {
	case <-me.turn:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	if i := slices.IndexFunc(*queue, func(q waiter) bool { return q.turn == me.turn }); i >= 0 {
		*queue = slices.Delete(*queue, i, i+1)
		w.mu.Unlock()
		return ctx.Err()
	}
	w.mu.Unlock()
	// The turn was handed over as ctx ended: pass it on.
	w.release()
	return ctx.Err()
}

// release ends the caller's turn and hands the writer to the next waiter.
func (w *writerTurns) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next waiter
	switch {
	case len(w.claims) > 0 && (len(w.others) == 0 || !w.lastWasClaim && time.Since(w.claims[0].since) >= w.patience):
		next, w.claims = w.claims[0], w.claims[1:]
		w.lastWasClaim = true
	case len(w.others) > 0:
		next, w.others = w.others[0], w.others[1:]
		w.lastWasClaim = false
	default:
		w.busy = false
		return
	}
	close(next.turn)
}
