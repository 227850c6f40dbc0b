package sqlite

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestWriterTurns: while the writer is busy, claim batches and other transactions queue; once
// it is free they alternate (a claim batch, one other, a claim batch...), the others in the
// order they came, and when only one kind waits it goes on alone. A waiter whose context ends
// leaves the queue without taking a turn.
func TestWriterTurns(t *testing.T) {
	t.Parallel()
	var w writerTurns
	waiting := func(claims, others int) {
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
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	queue := func(name string, claim bool) {
		wg.Go(func() {
			if err := w.acquire(t.Context(), claim); err != nil {
				t.Errorf("%s: %v", name, err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			w.release()
		})
	}

	if err := w.acquire(t.Context(), false); err != nil { // the writer, busy
		t.Fatal(err)
	}
	queue("claims-1", true)
	waiting(1, 0)
	for i, name := range []string{"lease-1", "ack-1", "lease-2"} {
		queue(name, false)
		waiting(1, i+1)
	}
	queue("claims-2", true)
	waiting(2, 3)
	queue("ack-2", false)
	waiting(2, 4)
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- w.acquire(ctx, false) }()
	waiting(2, 5)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended got %v", err)
	}
	waiting(2, 4)

	w.release()
	wg.Wait()
	want := "claims-1 lease-1 claims-2 ack-1 lease-2 ack-2"
	if got := strings.Join(order, " "); got != want {
		t.Errorf("turns %q, want %q", got, want)
	}
	w.mu.Lock()
	busy := w.busy
	w.mu.Unlock()
	if busy {
		t.Error("the writer is still busy with no one holding it")
	}

	// Only claims waiting after a claim's turn: they go on one after another.
	order = nil
	if err := w.acquire(t.Context(), true); err != nil {
		t.Fatal(err)
	}
	queue("claims-3", true)
	waiting(1, 0)
	queue("claims-4", true)
	waiting(2, 0)
	w.release()
	wg.Wait()
	if got := strings.Join(order, " "); got != "claims-3 claims-4" {
		t.Errorf("turns %q, want claims-3 claims-4", got)
	}
}
