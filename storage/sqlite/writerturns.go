package sqlite

import (
	"context"
	"slices"
	"sync"
)

// writerTurns decides which transaction gets the one writer connection next. database/sql
// hands a freed connection to a random waiter, and intake is only ever one waiter: the claim
// batch in line, which carries every new delivery queued behind it. With 16 workers leasing
// and acking, it got about one turn in 17, and new events waited seconds once the workers
// acked in batches and cycled faster (BENCHMARKS.md, sixth session). Here the claim batches
// and the other transactions take turns when both wait: a claim batch, then one other
// transaction, then a claim batch again. Intake cannot be starved by the drain, nor the drain
// by a steady intake, and the other transactions go in the order they came.
//
// The zero value is ready to use. Only transactions go through it; the writer connection is
// otherwise used for preparing statements, which database/sql queues on its own.
type writerTurns struct {
	mu   sync.Mutex
	busy bool
	// lastWasClaim says whether the turn in progress (or the last one) is a claim batch's.
	lastWasClaim bool
	claims       []chan struct{}
	others       []chan struct{}
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
	turn := make(chan struct{})
	if claim {
		w.claims = append(w.claims, turn)
	} else {
		w.others = append(w.others, turn)
	}
	w.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	queue := &w.others
	if claim {
		queue = &w.claims
	}
	if i := slices.Index(*queue, turn); i >= 0 {
		*queue = slices.Delete(*queue, i, i+1)
		w.mu.Unlock()
		return ctx.Err()
	}
	w.mu.Unlock()
	// The turn was handed over as ctx ended: pass it on.
	w.release()
	return ctx.Err()
}

// release ends the caller's turn and hands the writer to the next waiter: a claim batch after
// another transaction's turn (or when only claims wait), else the longest-waiting other
// transaction.
func (w *writerTurns) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next chan struct{}
	switch {
	case len(w.claims) > 0 && (!w.lastWasClaim || len(w.others) == 0):
		next, w.claims = w.claims[0], w.claims[1:]
		w.lastWasClaim = true
	case len(w.others) > 0:
		next, w.others = w.others[0], w.others[1:]
		w.lastWasClaim = false
	default:
		w.busy = false
		return
	}
	close(next)
}
