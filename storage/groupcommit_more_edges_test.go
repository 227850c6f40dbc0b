package storage

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestBatcherLimitOfOneCommitsEachItemAlone: a Limit of one is a bound like any other, not the
// default: items queued together still commit one per transaction.
func TestBatcherLimitOfOneCommitsEachItemAlone(t *testing.T) {
	t.Parallel()
	b := Batcher[int, int]{Limit: 1}
	var sizes []int // appended by the leader only, one batch at a time
	commit := func(batch []int) ([]int, []error, error) {
		sizes = append(sizes, len(batch))
		return slices.Clone(batch), make([]error, len(batch)), nil
	}
	res, errs := b.SubmitAll(t.Context(), []int{1, 2, 3}, commit)
	for i, err := range errs {
		if err != nil || res[i] != i+1 {
			t.Errorf("item %d: %d, %v", i+1, res[i], err)
		}
	}
	if !slices.Equal(sizes, []int{1, 1, 1}) {
		t.Errorf("batch sizes %v, want [1 1 1] with a Limit of 1", sizes)
	}
}

// TestBatcherSubmitWithItsContextEndedCommitsNothing: a Submit whose context has already ended
// is unavailable at once, and its item is never committed (a lease, say, taken for a caller that
// has gone).
func TestBatcherSubmitWithItsContextEndedCommitsNothing(t *testing.T) {
	t.Parallel()
	var b Batcher[int, int]
	commits := 0
	commit := func(batch []int) ([]int, []error, error) {
		commits++
		return slices.Clone(batch), make([]error, len(batch)), nil
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Submit(ctx, 1, commit); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("Submit with its context ended: %v, want unavailable and canceled", err)
	}
	if commits != 0 || b.Batches() != 0 {
		t.Errorf("Submit with its context ended: %d commits, %d batches; want none", commits, b.Batches())
	}
}

// TestBatcherSubmitAllOfNothing: SubmitAll with no items answers at once with nothing, commits
// nothing, and leaves the batcher serving the next caller.
func TestBatcherSubmitAllOfNothing(t *testing.T) {
	t.Parallel()
	var b Batcher[int, int]
	var sizes []int
	commit := func(batch []int) ([]int, []error, error) {
		sizes = append(sizes, len(batch))
		return slices.Clone(batch), make([]error, len(batch)), nil
	}
	res, errs := b.SubmitAll(t.Context(), nil, commit)
	if len(res) != 0 || len(errs) != 0 || len(sizes) != 0 {
		t.Fatalf("SubmitAll of nothing: %v, %v, batches %v", res, errs, sizes)
	}
	if r, err := b.Submit(t.Context(), 7, commit); err != nil || r != 7 {
		t.Errorf("Submit after SubmitAll of nothing: %d, %v", r, err)
	}
	if !slices.Equal(sizes, []int{1}) {
		t.Errorf("batch sizes %v, want [1]", sizes)
	}
}
