package storage

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestClaimBatcher checks group commit with a scripted commit function: claims queued while a
// batch commits go together into the next one, every caller gets its own outcome, a failed
// commit fails every claim of its batch, and a caller that gives up while queued is withdrawn.
func TestClaimBatcher(t *testing.T) {
	t.Parallel()
	var b ClaimBatcher
	release := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	commit := func(batch []Delivery) ([]ClaimResult, []error, error) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, len(batch))
		mu.Unlock()
		if first {
			<-release // hold the first batch so that the others queue behind it
		}
		res := make([]ClaimResult, len(batch))
		errs := make([]error, len(batch))
		for i, d := range batch {
			if d.EventID == "bad" {
				errs[i] = fmt.Errorf("claim: %w", ErrAlreadyExists)
				continue
			}
			if d.EventID == "fail-batch" {
				return nil, nil, fmt.Errorf("commit: %w", ErrUnavailable)
			}
			res[i] = ClaimResult{Accepted: true, InboxID: d.InboxID}
		}
		return res, errs, nil
	}
	type outcome struct {
		res ClaimResult
		err error
	}
	results := make(map[string]outcome)
	var wg sync.WaitGroup
	submit := func(id string) {
		defer wg.Done()
		res, err := b.Submit(context.Background(), Delivery{EventID: id, InboxID: "in-" + id}, commit)
		mu.Lock()
		results[id] = outcome{res, err}
		mu.Unlock()
	}
	wg.Add(1)
	go submit("first")
	for { // wait until the first batch is committing
		mu.Lock()
		n := len(sizes)
		mu.Unlock()
		if n == 1 {
			break
		}
	}
	ids := []string{"a", "b", "bad", "c"}
	for _, id := range ids {
		wg.Add(1)
		go submit(id)
	}
	for { // wait until all four are queued
		b.batcher.mu.Lock()
		n := len(b.batcher.queue)
		b.batcher.mu.Unlock()
		if n == len(ids) {
			break
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.Submit(ctx, Delivery{EventID: "impatient"}, commit)
		gaveUp <- err
	}()
	for {
		b.batcher.mu.Lock()
		n := len(b.batcher.queue)
		b.batcher.mu.Unlock()
		if n == len(ids)+1 {
			break
		}
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller that gave up while queued got %v", err)
	}
	close(release)
	wg.Wait()

	if len(sizes) != 2 || sizes[0] != 1 || sizes[1] != len(ids) {
		t.Fatalf("batch sizes %v, want [1 %d]: the queued claims must share one commit", sizes, len(ids))
	}
	for _, id := range []string{"first", "a", "b", "c"} {
		if o := results[id]; o.err != nil || !o.res.Accepted || o.res.InboxID != "in-"+id {
			t.Errorf("%s: %+v", id, o)
		}
	}
	if o := results["bad"]; !errors.Is(o.err, ErrAlreadyExists) {
		t.Errorf("bad: %+v, want its own error", o)
	}
	if b.Batches() != 2 {
		t.Errorf("Batches() = %d, want 2", b.Batches())
	}

	// A commit that fails fails every claim of its batch, and none is accepted.
	res, err := b.Submit(context.Background(), Delivery{EventID: "fail-batch"}, commit)
	if !errors.Is(err, ErrUnavailable) || res.Accepted {
		t.Fatalf("failed batch: %+v, %v", res, err)
	}
}

// TestClaimBatcherCommittingEachClaim checks the mode without group commit: every claim is its
// own batch, and claims commit concurrently rather than queueing behind each other.
func TestClaimBatcherCommittingEachClaim(t *testing.T) {
	t.Parallel()
	var b ClaimBatcher
	b.CommitEachClaim()
	const callers = 4
	var inFlight sync.WaitGroup
	inFlight.Add(callers)
	commit := func(batch []Delivery) ([]ClaimResult, []error, error) {
		if len(batch) != 1 {
			t.Errorf("a batch of %d claims, want 1", len(batch))
		}
		// Every caller's commit must be running at once for any of them to go on.
		inFlight.Done()
		inFlight.Wait()
		if batch[0].EventID == "bad" {
			return nil, []error{fmt.Errorf("claim: %w", ErrAlreadyExists)}, nil
		}
		return []ClaimResult{{Accepted: true, InboxID: batch[0].InboxID}}, []error{nil}, nil
	}
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		id := fmt.Sprint(i)
		if i == 0 {
			id = "bad"
		}
		wg.Go(func() {
			res, err := b.Submit(context.Background(), Delivery{EventID: id, InboxID: "in-" + id}, commit)
			if err == nil && (!res.Accepted || res.InboxID != "in-"+id) {
				err = fmt.Errorf("result %+v", res)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if !errors.Is(errs[0], ErrAlreadyExists) {
		t.Errorf("the bad claim got %v, want its own error", errs[0])
	}
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("claim %d: %v", i+1, err)
		}
	}
	if b.Batches() != callers {
		t.Errorf("Batches() = %d, want %d", b.Batches(), callers)
	}
}

// TestClaimBatcherObserver: once set, the observer hears of every batch, with its size, its
// commit time and whether it committed, with group commit on and off.
func TestClaimBatcherObserver(t *testing.T) {
	t.Parallel()
	commit := func(batch []Delivery) ([]ClaimResult, []error, error) {
		if batch[0].EventID == "fail-batch" {
			return nil, nil, fmt.Errorf("commit: %w", ErrUnavailable)
		}
		time.Sleep(time.Millisecond) // so that the observed time can be checked
		return make([]ClaimResult, len(batch)), make([]error, len(batch)), nil
	}
	for _, each := range []bool{false, true} {
		var b ClaimBatcher
		if each {
			b.CommitEachClaim()
		}
		if _, err := b.Submit(t.Context(), Delivery{EventID: "unobserved"}, commit); err != nil {
			t.Fatal(err)
		}
		var seen []ClaimBatchStats
		b.ObserveBatches(func(s ClaimBatchStats) { seen = append(seen, s) })
		if _, err := b.Submit(t.Context(), Delivery{EventID: "ok"}, commit); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Submit(t.Context(), Delivery{EventID: "fail-batch"}, commit); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("failed batch: %v", err)
		}
		if len(seen) != 2 || seen[0].Claims != 1 || !seen[0].Committed || seen[1].Claims != 1 || seen[1].Committed ||
			seen[0].Took < time.Millisecond {
			t.Fatalf("commit each claim %v: observed %+v, want a committed batch of 1, then a failed one", each, seen)
		}
	}
}

// TestBatcherSubmitAll checks that the items of one SubmitAll share a batch: alone (one
// commit), and behind a batch in flight (one more commit, with whatever else queued), each
// answered in order with its own outcome; that a batch filling up carries the rest over to
// the next; and that a caller whose context has ended commits nothing.
func TestBatcherSubmitAll(t *testing.T) {
	t.Parallel()
	var b Batcher[int, string]
	var mu sync.Mutex
	var sizes []int
	hold := make(chan struct{})
	commit := func(batch []int) ([]string, []error, error) {
		mu.Lock()
		sizes = append(sizes, len(batch))
		mu.Unlock()
		if batch[0] < 0 {
			<-hold // a batch in flight, for the others to queue behind
		}
		res := make([]string, len(batch))
		errs := make([]error, len(batch))
		for i, n := range batch {
			if n%7 == 0 {
				errs[i] = fmt.Errorf("item %d: %w", n, ErrNotFound)
				continue
			}
			res[i] = fmt.Sprint("done ", n)
		}
		return res, errs, nil
	}
	check := func(what string, items []int, res []string, errs []error) {
		t.Helper()
		if len(res) != len(items) || len(errs) != len(items) {
			t.Fatalf("%s: %d results and %d errors for %d items", what, len(res), len(errs), len(items))
		}
		for i, n := range items {
			switch {
			case n%7 == 0 && !errors.Is(errs[i], ErrNotFound):
				t.Errorf("%s: item %d got %q, %v; want its own error", what, n, res[i], errs[i])
			case n%7 != 0 && (errs[i] != nil || res[i] != fmt.Sprint("done ", n)):
				t.Errorf("%s: item %d got %q, %v", what, n, res[i], errs[i])
			}
		}
	}
	takeSizes := func() []int {
		mu.Lock()
		defer mu.Unlock()
		s := sizes
		sizes = nil
		return s
	}
	queued := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			b.mu.Lock()
			q := len(b.queue)
			b.mu.Unlock()
			if q == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d queued, want %d", q, n)
			}
		}
	}

	items := []int{1, 2, 3, 7, 8, 9, 10, 11, 12, 13}
	res, errs := b.SubmitAll(t.Context(), items, commit)
	check("alone", items, res, errs)
	if s := takeSizes(); len(s) != 1 || s[0] != len(items) {
		t.Fatalf("alone: batch sizes %v, want one of %d", s, len(items))
	}

	// Behind a batch in flight: a lone Submit and then the SubmitAll queue, and go together.
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.Submit(t.Context(), -1, commit) })
	for committing := 0; committing == 0; time.Sleep(time.Millisecond) {
		mu.Lock()
		committing = len(sizes)
		mu.Unlock()
	}
	wg.Go(func() {
		if _, err := b.Submit(t.Context(), 100, commit); err != nil {
			t.Errorf("lone submit: %v", err)
		}
	})
	queued(1)
	wg.Go(func() {
		res, errs := b.SubmitAll(t.Context(), items, commit)
		check("behind a batch", items, res, errs)
	})
	queued(1 + len(items))
	close(hold)
	wg.Wait()
	if s := takeSizes(); len(s) != 2 || s[1] != 1+len(items) {
		t.Fatalf("behind a batch: sizes %v, want [1 %d]", s, 1+len(items))
	}

	// More than a batch holds: the rest goes into the next batch, every item answered.
	many := make([]int, MaxClaimBatch+5)
	for i := range many {
		many[i] = i + 1
	}
	res, errs = b.SubmitAll(t.Context(), many, commit)
	check("more than a batch", many, res, errs)
	if s := takeSizes(); len(s) != 2 || s[0] != MaxClaimBatch || s[1] != 5 {
		t.Fatalf("more than a batch: sizes %v, want [%d 5]", s, MaxClaimBatch)
	}

	// A Limit smaller than MaxClaimBatch bounds every batch.
	b.Limit = 3
	items = []int{1, 2, 3, 4, 5, 6, 7, 8}
	res, errs = b.SubmitAll(t.Context(), items, commit)
	check("with a limit", items, res, errs)
	if s := takeSizes(); !slices.Equal(s, []int{3, 3, 2}) {
		t.Fatalf("with a limit of 3: sizes %v, want [3 3 2]", s)
	}
	b.Limit = 0

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, errs = b.SubmitAll(ctx, []int{1, 2}, commit)
	for _, err := range errs {
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Errorf("with its context ended: %v", err)
		}
	}
	if s := takeSizes(); len(s) != 0 {
		t.Errorf("with its context ended: batches %v committed", s)
	}
}

// TestBatcherHeadGivesUp checks a caller whose context ends while it waits at the head of the
// queue, behind the batch in flight: it returns at once, its item is never committed, and the
// callers queued behind it still get their batch.
func TestBatcherHeadGivesUp(t *testing.T) {
	t.Parallel()
	var b Batcher[string, string]
	hold := make(chan struct{})
	var mu sync.Mutex
	var committed []string
	commit := func(items []string) ([]string, []error, error) {
		if items[0] == "in flight" {
			<-hold
		}
		mu.Lock()
		committed = append(committed, items...)
		mu.Unlock()
		return items, make([]error, len(items)), nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.Submit(t.Context(), "in flight", commit) })
	whileQueued := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			b.mu.Lock()
			q, c := len(b.queue), b.committing
			b.mu.Unlock()
			if q == n && c == 1 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d queued behind %d committing, want %d behind 1", q, c, n)
			}
		}
	}
	whileQueued(0)
	ctx, cancel := context.WithCancel(t.Context())
	gaveUp := make(chan error, 1)
	go func() { _, err := b.Submit(ctx, "gave up", commit); gaveUp <- err }()
	whileQueued(1)
	wg.Go(func() {
		if res, err := b.Submit(t.Context(), "behind", commit); err != nil || res != "behind" {
			t.Errorf("the caller behind the one that gave up: %q, %v", res, err)
		}
	})
	whileQueued(2)
	cancel()
	select {
	case err := <-gaveUp:
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
			t.Errorf("the head that gave up got %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the head that gave up still waits for the batch in flight")
	}
	close(hold)
	wg.Wait()
	if !slices.Equal(committed, []string{"in flight", "behind"}) {
		t.Errorf("committed %q, want the batch in flight and then the caller behind, not the one that gave up", committed)
	}
}

// TestBatcherCommitPanics checks that a commit that panics fails every call of its batch,
// the leader's too, with an error that carries the panic, and leaves the batcher working: the
// callers queued behind it get a leader and their own batch.
func TestBatcherCommitPanics(t *testing.T) {
	t.Parallel()
	// Batches of at most three, so that the caller queued behind a batch of three is not in it.
	b := Batcher[string, string]{Limit: 3}
	hold := make(chan struct{})
	commit := func(items []string) ([]string, []error, error) {
		switch items[0] {
		case "in flight":
			<-hold
		case "panics":
			panic("commit bug")
		}
		return items, make([]error, len(items)), nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.Submit(t.Context(), "in flight", commit) })
	for b.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	// Queued behind the batch in flight, the three go into one batch, led by the first.
	var errs []error
	wg.Go(func() { _, errs = b.SubmitAll(t.Context(), []string{"panics", "batchmate", "batchmate"}, commit) })
	for b.Waiting() != 4 {
		time.Sleep(time.Millisecond)
	}
	wg.Go(func() {
		if res, err := b.Submit(t.Context(), "behind", commit); err != nil || res != "behind" {
			t.Errorf("the caller queued behind the panicking batch: %q, %v", res, err)
		}
	})
	for b.Waiting() != 5 {
		time.Sleep(time.Millisecond)
	}
	close(hold)
	wg.Wait()
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "panicked: commit bug") || !strings.Contains(err.Error(), "groupcommit_test.go") {
			t.Errorf("item %d of the panicking batch got %v, want the panic and its stack", i, err)
		}
	}
	if res, err := b.Submit(t.Context(), "after", commit); err != nil || res != "after" {
		t.Errorf("a call after the panicking batch: %q, %v", res, err)
	}
	// A commit that answers for fewer items than it was given fails its batch, rather than
	// panicking the leader as it hands out the answers.
	short := func([]string) ([]string, []error, error) { return nil, nil, nil }
	if _, err := b.Submit(t.Context(), "short", short); err == nil || !strings.Contains(err.Error(), "0 results and 0 errors for 1 items") {
		t.Errorf("a commit answering for no items: %v", err)
	}
}

// TestClaimBatchBytes checks that claims queued together split into batches of at most
// MaxClaimBatchBytes of bodies and headers, and that a claim larger than that goes alone
// rather than not at all.
func TestClaimBatchBytes(t *testing.T) {
	t.Parallel()
	// A third of the bound in each body, less a little for the headers: three fit, not four.
	third := make([]byte, MaxClaimBatchBytes/3-100)
	oversized := make([]byte, MaxClaimBatchBytes+1)
	var deliveries []Delivery
	for i, body := range [][]byte{third, third, third, third, third, third, third, oversized, third} {
		deliveries = append(deliveries, Delivery{EventID: fmt.Sprint(i), Body: body, Headers: []Header{{Name: "X-Signature", Value: "v1=abc"}}})
	}
	if sizes, want := claimBatchSizes(t, deliveries), []int{1, 3, 3, 1, 1, 1}; !slices.Equal(sizes, want) {
		t.Errorf("batch sizes %v, want %v", sizes, want)
	}
}

// claimBatchSizes queues the deliveries, in their order, behind a claim whose batch is being
// committed, lets that batch end, and returns the sizes of the batches committed, the first
// being the one claim that held the others back: how a ClaimBatcher splits what it was given.
func claimBatchSizes(t *testing.T, deliveries []Delivery) []int {
	t.Helper()
	var b ClaimBatcher
	hold := make(chan struct{})
	var mu sync.Mutex
	var sizes []int
	commit := func(batch []Delivery) ([]ClaimResult, []error, error) {
		if batch[0].EventID == "in flight" {
			<-hold
		}
		mu.Lock()
		sizes = append(sizes, len(batch))
		mu.Unlock()
		return make([]ClaimResult, len(batch)), make([]error, len(batch)), nil
	}
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = b.Submit(t.Context(), Delivery{EventID: "in flight"}, commit) })
	for b.batcher.Waiting() != 1 {
		time.Sleep(time.Millisecond)
	}
	for i, d := range deliveries {
		wg.Go(func() {
			if _, err := b.Submit(t.Context(), d, commit); err != nil {
				t.Errorf("claim %s: %v", d.EventID, err)
			}
		})
		for b.batcher.Waiting() != i+2 { // queued in this order
			time.Sleep(time.Millisecond)
		}
	}
	close(hold)
	wg.Wait()
	return sizes
}
