package sqlite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// turnTaker queues named transactions on w and records the order they get their turns in.
type turnTaker struct {
	t     *testing.T
	w     *writerTurns
	mu    sync.Mutex
	order []string
	wg    sync.WaitGroup
}

// queue starts a transaction that waits for its turn (a claim batch if its name starts with
// "claims"), and returns once it is queued: after claims and others are waiting.
func (q *turnTaker) queue(name string, claims, others int) {
	q.t.Helper()
	q.wg.Go(func() {
		if err := q.w.acquire(q.t.Context(), strings.HasPrefix(name, "claims")); err != nil {
			q.t.Errorf("%s: %v", name, err)
			return
		}
		q.mu.Lock()
		q.order = append(q.order, name)
		q.mu.Unlock()
		q.w.release()
	})
	waitQueued(q.t, q.w, claims, others)
}

// turns waits for every queued transaction to have had its turn, and returns their order.
func (q *turnTaker) turns() string {
	q.wg.Wait()
	q.mu.Lock()
	defer q.mu.Unlock()
	order := strings.Join(q.order, " ")
	q.order = nil
	return order
}

func waitQueued(t *testing.T, w *writerTurns, claims, others int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		c, o := len(w.claims), len(w.others)
		w.mu.Unlock()
		if c == claims && o == others {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d claims and %d others waiting, want %d and %d", c, o, claims, others)
		}
	}
}

// TestWriterTurns: while the writer is busy, claim batches and other transactions queue; once
// it is free, without patience, they alternate (a claim batch, one other, a claim batch...),
// the others in the order they came, and when only one kind waits it goes on alone. A waiter
// whose context ends leaves the queue without taking a turn.
func TestWriterTurns(t *testing.T) {
	t.Parallel()
	var w writerTurns
	q := &turnTaker{t: t, w: &w}
	if err := w.acquire(t.Context(), false); err != nil { // the writer, busy
		t.Fatal(err)
	}
	q.queue("claims-1", 1, 0)
	q.queue("lease-1", 1, 1)
	q.queue("ack-1", 1, 2)
	q.queue("lease-2", 1, 3)
	q.queue("claims-2", 2, 3)
	q.queue("ack-2", 2, 4)
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- w.acquire(ctx, false) }()
	waitQueued(t, &w, 2, 5)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended got %v", err)
	}
	waitQueued(t, &w, 2, 4)
	w.release()
	if got, want := q.turns(), "claims-1 lease-1 claims-2 ack-1 lease-2 ack-2"; got != want {
		t.Errorf("turns %q, want %q", got, want)
	}
	w.mu.Lock()
	busy := w.busy
	w.mu.Unlock()
	if busy {
		t.Error("the writer is still busy with no one holding it")
	}

	// Only claims waiting after a claim's turn: they go on one after another.
	if err := w.acquire(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	q.queue("claims-3", 1, 0)
	q.queue("claims-4", 2, 0)
	w.release()
	if got := q.turns(); got != "claims-3 claims-4" {
		t.Errorf("turns %q, want claims-3 claims-4", got)
	}
}

// TestWriterTurnsWithPatience: a claim batch lets the other transactions go first until it
// has waited its patience, and no longer.
func TestWriterTurnsWithPatience(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		patience time.Duration
		want     string
	}{
		{"patient claims let every other go first", time.Hour, "lease-1 lease-2 claims-1"},
		{"claims that waited out their patience go next", time.Millisecond, "claims-1 lease-1 lease-2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := writerTurns{patience: c.patience}
			q := &turnTaker{t: t, w: &w}
			if err := w.acquire(t.Context(), false); err != nil {
				t.Fatal(err)
			}
			q.queue("claims-1", 1, 0)
			q.queue("lease-1", 1, 1)
			q.queue("lease-2", 1, 2)
			time.Sleep(5 * time.Millisecond) // past the short patience
			w.release()
			if got := q.turns(); got != c.want {
				t.Errorf("turns %q, want %q", got, c.want)
			}
		})
	}
}
