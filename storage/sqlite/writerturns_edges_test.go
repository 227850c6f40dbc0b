package sqlite

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestClaimTakenWithoutWaitingStillLetsAnotherGoNext: a claim batch that found the writer free
// counts as the last turn's kind, so a claim batch queued behind it waits for one other
// transaction, even with no patience at all.
func TestClaimTakenWithoutWaitingStillLetsAnotherGoNext(t *testing.T) {
	t.Parallel()
	var w writerTurns
	q := &turnTaker{t: t, w: &w}
	if err := w.acquire(t.Context(), true); err != nil { // a claim batch, the writer free
		t.Fatal(err)
	}
	q.queue("claims-1", 1, 0)
	q.queue("lease-1", 1, 1)
	w.release()
	if got, want := q.turns(), "lease-1 claims-1"; got != want {
		t.Errorf("turns %q, want %q", got, want)
	}
}

// TestFirstWaiterGivingUpHandsNoTurnAway: the first other transaction in line whose context
// ends leaves the queue and nothing else: the turn stays with its holder, and the claim batch
// waiting behind it keeps waiting.
func TestFirstWaiterGivingUpHandsNoTurnAway(t *testing.T) {
	t.Parallel()
	var w writerTurns
	if err := w.acquire(t.Context(), false); err != nil { // the writer, busy
		t.Fatal(err)
	}
	claimGot := make(chan error, 1)
	go func() { claimGot <- w.acquire(t.Context(), true) }()
	waitQueued(t, &w, 1, 0)
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- w.acquire(ctx, false) }()
	waitQueued(t, &w, 1, 1)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended got %v", err)
	}
	w.mu.Lock()
	claims, others := len(w.claims), len(w.others)
	w.mu.Unlock()
	if claims != 1 || others != 0 {
		t.Fatalf("after the first other waiter gave up: %d claims and %d others waiting, want 1 and 0 (the turn is still held)", claims, others)
	}
	w.release()
	if err := <-claimGot; err != nil {
		t.Fatalf("the claim batch: %v", err)
	}
	w.release()
}

// TestTurnHandedAsTheWaiterGivesUpGoesOn: a waiter whose context ends just as the turn is
// handed to it (it woke for its context, and the release took the lock before it) passes the
// turn on: the transaction behind it is never left waiting for a turn that no one holds.
func TestTurnHandedAsTheWaiterGivesUpGoesOn(t *testing.T) {
	t.Parallel()
	var w writerTurns
	if err := w.acquire(t.Context(), false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	first := make(chan error, 1)
	firstGoroutine := make(chan string, 1)
	go func() {
		firstGoroutine <- currentGoroutine()
		first <- w.acquire(ctx, false)
	}()
	waiter := <-firstGoroutine
	waitQueued(t, &w, 0, 1)
	behind := make(chan error, 1)
	go func() { behind <- w.acquire(t.Context(), false) }()
	waitQueued(t, &w, 0, 2)

	w.mu.Lock()
	cancel()
	// The first waiter has woken for its context and waits for the lock held here.
	for deadline := time.Now().Add(time.Minute); !acquireWaitsForTheLock(waiter); runtime.Gosched() {
		if time.Now().After(deadline) {
			w.mu.Unlock()
			t.Fatal("the first waiter never came to wait for the lock")
		}
	}
	// The release, as release does it, while the first waiter waits for the lock: the turn
	// goes to the first waiter.
	next := w.others[0]
	w.others = w.others[1:]
	close(next.turn)
	w.mu.Unlock()

	if err := <-first; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first waiter got %v, want context.Canceled", err)
	}
	w.mu.Lock()
	others := len(w.others)
	w.mu.Unlock()
	if others != 0 {
		t.Fatal("the turn was dropped: the transaction behind still waits for it")
	}
	if err := <-behind; err != nil {
		t.Fatalf("the transaction behind: %v", err)
	}
	w.release()
}

// currentGoroutine is the header of the calling goroutine's stack trace ("goroutine 42 "),
// which names it in runtime.Stack's dump of all goroutines.
func currentGoroutine() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	header, _, _ := strings.Cut(string(buf), "[")
	return header
}

// acquireWaitsForTheLock reports whether the goroutine named by header (see currentGoroutine)
// is in writerTurns.acquire waiting for the turns' mutex. Only that goroutine: the package's
// other tests run alongside, and their stores' goroutines wait in acquire too.
func acquireWaitsForTheLock(header string) bool {
	buf := make([]byte, 1<<20)
	for {
		// A dump that fills the buffer may have been cut before the goroutine's own.
		if n := runtime.Stack(buf, true); n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.HasPrefix(g, header) && strings.Contains(g, "(*writerTurns).acquire") && strings.Contains(g, "Mutex).Lock") {
			return true
		}
	}
	return false
}
