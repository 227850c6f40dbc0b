package storage

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestClaimBatchBytesUpToTheBoundIsOneBatch: claims whose bodies, headers and URLs weigh
// exactly MaxClaimBatchBytes together fit in one batch; only a claim that would take the batch
// over the bound waits for the next.
func TestClaimBatchBytesUpToTheBoundIsOneBatch(t *testing.T) {
	t.Parallel()
	half := MaxClaimBatchBytes / 2
	sizes := claimBatchSizes(t, []Delivery{
		{EventID: "a", Body: make([]byte, half-10), URL: "0123456789"}, // half, with its URL
		{EventID: "b", Body: make([]byte, half-10), Headers: []Header{{Name: "X-Sig", Value: "12345"}}},
		{EventID: "c", Body: []byte("x")}, // one byte over: the next batch
	})
	if !slices.Equal(sizes, []int{1, 2, 1}) {
		t.Errorf("batch sizes %v, want [1 2 1]: the two claims of exactly MaxClaimBatchBytes together in one", sizes)
	}
}

// TestBatcherCountsOnlyCommittedBatches: Batches counts the batch transactions that committed,
// not those that failed.
func TestBatcherCountsOnlyCommittedBatches(t *testing.T) {
	t.Parallel()
	var b Batcher[string, string]
	fail := func(items []string) ([]string, []error, error) { return nil, nil, errors.New("commit failed") }
	ok := func(items []string) ([]string, []error, error) { return items, make([]error, len(items)), nil }
	if _, err := b.Submit(t.Context(), "x", fail); err == nil {
		t.Fatal("a failed commit answered no error")
	}
	if n := b.Batches(); n != 0 {
		t.Fatalf("Batches after a failed commit = %d, want 0", n)
	}
	if _, err := b.Submit(t.Context(), "y", ok); err != nil {
		t.Fatal(err)
	}
	if n := b.Batches(); n != 1 {
		t.Fatalf("Batches after one commit = %d, want 1", n)
	}
}

// TestBatcherCommitAnsweringTooFewResults: a commit that answers fewer results than items
// (its errors complete) fails its batch, every caller with an error, and the batcher goes on;
// it does not panic on the missing results.
func TestBatcherCommitAnsweringTooFewResults(t *testing.T) {
	t.Parallel()
	var b Batcher[string, string]
	short := func(items []string) ([]string, []error, error) { return nil, make([]error, len(items)), nil }
	res, err := b.Submit(t.Context(), "x", short)
	if err == nil {
		t.Fatalf("a commit without results answered %q, nil; want an error", res)
	}
	ok := func(items []string) ([]string, []error, error) { return items, make([]error, len(items)), nil }
	if res, err := b.Submit(t.Context(), "y", ok); err != nil || res != "y" {
		t.Fatalf("the next call = %q, %v", res, err)
	}
}

// gateCtx is a context whose first Done call blocks until the test opens the gate, and which
// is cancelled from then on: it holds a queued caller just before it looks at its channels.
type gateCtx struct {
	context.Context
	gate   chan struct{}
	once   sync.Once
	inside chan struct{}
	done   chan struct{}
}

func newGateCtx() *gateCtx {
	done := make(chan struct{})
	close(done)
	return &gateCtx{Context: context.Background(), gate: make(chan struct{}), inside: make(chan struct{}), done: done}
}

func (g *gateCtx) Done() <-chan struct{} {
	g.once.Do(func() {
		close(g.inside)
		<-g.gate
	})
	return g.done
}

func (g *gateCtx) Err() error {
	select {
	case <-g.gate:
		return context.Canceled
	default:
		return nil
	}
}

// TestBatcherHeadHandedTheLeadLeadsThoughItGaveUp: a queued caller whose context ends just as
// the lead is handed to it leads anyway: its item is committed and answered, and the callers
// after it are not left without a leader. (Which of the two it sees first is up to select, so
// the race is run many times.)
func TestBatcherHeadHandedTheLeadLeadsThoughItGaveUp(t *testing.T) {
	t.Parallel()
	ok := func(items []string) ([]string, []error, error) { return items, make([]error, len(items)), nil }
	for i := range 40 {
		var b Batcher[string, string]
		hold := make(chan struct{})
		first := make(chan struct{})
		held := func(items []string) ([]string, []error, error) {
			close(first)
			<-hold
			return ok(items)
		}
		leaderDone := make(chan struct{})
		go func() {
			defer close(leaderDone)
			_, _ = b.Submit(context.Background(), "in flight", held)
		}()
		<-first
		ctx := newGateCtx()
		type outcome struct {
			res string
			err error
		}
		out := make(chan outcome, 1)
		go func() {
			res, err := b.Submit(ctx, "head", ok)
			out <- outcome{res, err}
		}()
		<-ctx.inside // queued, about to look at its channels
		close(hold)
		<-leaderDone // the leader handed the lead on before it returned
		close(ctx.gate)
		select {
		case o := <-out:
			if o.err != nil || o.res != "head" {
				t.Fatalf("run %d: the head handed the lead = %q, %v; want its item committed", i, o.res, o.err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d: the head handed the lead never answered", i)
		}
		next := make(chan error, 1)
		go func() { _, err := b.Submit(context.Background(), "next", ok); next <- err }()
		select {
		case err := <-next:
			if err != nil {
				t.Fatalf("run %d: the next call: %v", i, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d: the next call found no leader", i)
		}
	}
}

// TestBatcherCallerInABatchSeesItThrough: a caller whose context ends once its item is in the
// batch being committed waits for that commit and gets its outcome: it is not answered
// ErrUnavailable for an item that then commits (its outcome left unknown).
func TestBatcherCallerInABatchSeesItThrough(t *testing.T) {
	t.Parallel()
	var b Batcher[string, string]
	hold, hold2 := make(chan struct{}), make(chan struct{})
	commit := func(items []string) ([]string, []error, error) {
		switch items[0] {
		case "in flight":
			<-hold
		case "leader":
			<-hold2
		}
		return items, make([]error, len(items)), nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.Submit(t.Context(), "in flight", commit) })
	waitFor := func(queued, committing int) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			b.mu.Lock()
			q, c := len(b.queue), b.committing
			b.mu.Unlock()
			if q == queued && c == committing {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d queued, %d committing; want %d, %d", q, c, queued, committing)
			}
		}
	}
	waitFor(0, 1)
	wg.Go(func() { _, _ = b.Submit(t.Context(), "leader", commit) })
	waitFor(1, 1)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type outcome struct {
		res string
		err error
	}
	out := make(chan outcome, 1)
	go func() { res, err := b.Submit(ctx, "in the batch", commit); out <- outcome{res, err} }()
	waitFor(2, 1)
	close(hold)
	waitFor(0, 2) // "leader" and "in the batch" are being committed
	cancel()
	time.Sleep(20 * time.Millisecond)
	close(hold2)
	o := <-out
	if o.err != nil || o.res != "in the batch" {
		t.Fatalf("caller whose context ended in a committing batch = %q, %v; want its committed outcome", o.res, o.err)
	}
	wg.Wait()
}
