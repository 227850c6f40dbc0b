package storage

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// MaxClaimBatch bounds how many claims (or other operations, see Batcher) share one
// transaction, so one commit never holds locks for long.
const MaxClaimBatch = 128

// MaxClaimBatchBytes bounds the bodies and headers one claim batch carries, besides
// MaxClaimBatch: a batch takes queued claims while they fit (a claim larger than this goes
// alone). A batch is one statement's parameters, and CockroachDB refuses a message over
// 16 MiB by default (sql.conn.max_read_buffer_message_size), PostgreSQL one over 1 GiB; a
// refused batch would fail every claim in it, small ones too, and hold up the queue behind.
const MaxClaimBatchBytes = 8 << 20

// MaxLeaseBatch bounds how many leases share one transaction (Batcher.Limit). The server's
// Lease takes up to 100 deliveries, each a row read and rewritten with its body, so a batch
// of 16 touches at most 1,600: the claim batch waiting for SQLite's one writer, or anything
// waiting for those rows on PostgreSQL, waits no longer than that.
const MaxLeaseBatch = 16

// Batcher is group commit for any kind of write whose cost is mostly its commit: concurrent
// calls of Submit queue here and the first of them, the leader, commits everything queued in
// one transaction (at most Limit), then hands the lead to the next queued caller. An
// idle store adds no latency: a lone call is its own batch at once. Every caller is answered
// only after the transaction holding its item has committed; if the commit fails, every item
// of the batch fails with the commit's error. The zero value is ready to use.
type Batcher[T, R any] struct {
	// Limit bounds the items of one batch; zero or less: MaxClaimBatch. Set it before use.
	Limit int

	mu      sync.Mutex
	queue   []*batchCall[T, R]
	leading bool
	batches int64
	// committing is the size of the batch being committed.
	committing int
}

// Commit commits the items as one transaction, in order, and returns each one's result or its
// own error, or an error for the whole batch when the transaction did not commit.
type Commit[T, R any] func(batch []T) ([]R, []error, error)

type batchCall[T, R any] struct {
	item T
	res  R
	err  error
	done chan struct{}
	// lead is closed to hand this waiting caller the leader's role.
	lead chan struct{}
}

// Batches reports how many batch transactions committed (for tests and curiosity).
func (b *Batcher[T, R]) Batches() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.batches
}

// Waiting reports how many callers wait for their outcome, queued or in the batch being
// committed (for tests).
func (b *Batcher[T, R]) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue) + b.committing
}

// Submit queues item and returns its outcome once its batch committed (or failed). A caller
// whose context ends while still queued is withdrawn with an ErrUnavailable error; one already
// in a batch waits for that batch, which is quick, so its outcome is never left unknown.
func (b *Batcher[T, R]) Submit(ctx context.Context, item T, commit Commit[T, R]) (R, error) {
	if err := ctx.Err(); err != nil {
		var zero R
		return zero, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	c := newBatchCall[T, R](item)
	return b.await(ctx, c, b.enqueue(c), commit)
}

// SubmitAll queues items together and returns each one's outcome as Submit would, in order.
// Queued in one step, they go into one batch when they fit in what is left of it (with the
// items queued before them, at most Limit): a caller with several writes at hand gets
// them one commit, not a commit for the first and another for the rest, as concurrent Submit
// calls would.
func (b *Batcher[T, R]) SubmitAll(ctx context.Context, items []T, commit Commit[T, R]) ([]R, []error) {
	results := make([]R, len(items))
	errs := make([]error, len(items))
	if err := ctx.Err(); err != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return results, errs
	}
	if len(items) == 0 {
		return results, errs
	}
	calls := make([]*batchCall[T, R], len(items))
	for i, item := range items {
		calls[i] = newBatchCall[T, R](item)
	}
	lead := b.enqueue(calls...)
	// Every call waits on its own: any of them may be handed the lead when a batch before it
	// fills up, and each may be withdrawn alone.
	var wg sync.WaitGroup
	for i, c := range calls[1:] {
		wg.Go(func() { results[i+1], errs[i+1] = b.await(ctx, c, false, commit) })
	}
	results[0], errs[0] = b.await(ctx, calls[0], lead, commit)
	wg.Wait()
	return results, errs
}

func newBatchCall[T, R any](item T) *batchCall[T, R] {
	return &batchCall[T, R]{item: item, done: make(chan struct{}), lead: make(chan struct{})}
}

// enqueue appends calls to the queue, in one step, and reports whether the first of them is
// to lead: there was no leader, so the queue was empty and it is now at its head.
func (b *Batcher[T, R]) enqueue(calls ...*batchCall[T, R]) (lead bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.queue = append(b.queue, calls...)
	lead = !b.leading
	b.leading = true
	return lead
}

// await waits for c's outcome, leading a batch first when c leads or is handed the lead.
func (b *Batcher[T, R]) await(ctx context.Context, c *batchCall[T, R], lead bool, commit Commit[T, R]) (R, error) {
	if !lead {
		select {
		case <-c.done:
			return c.res, c.err
		case <-c.lead:
		case <-ctx.Done():
			if b.withdraw(c) {
				var zero R
				return zero, fmt.Errorf("%w: %w", ErrUnavailable, ctx.Err())
			}
			// Already taken into a batch, or handed the lead: see it through.
			select {
			case <-c.done:
				return c.res, c.err
			case <-c.lead:
			}
		}
	}
	// Leading: commit one batch (it holds c: c is first in the queue, or was handed the lead
	// as its first), then pass the lead on to the next queued caller.
	b.mu.Lock()
	n := b.nextBatchLen()
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	b.committing = n
	b.mu.Unlock()
	b.commit(batch, commit)
	// The queue's backing array still holds the batch's calls, and with them their items (a
	// claim's body), until an append reallocates it: let them go now that they are answered.
	clear(batch)
	b.mu.Lock()
	if len(b.queue) > 0 {
		close(b.queue[0].lead)
	} else {
		b.leading = false
	}
	b.mu.Unlock()
	<-c.done
	return c.res, c.err
}

// weighed is an item that counts its bytes toward MaxClaimBatchBytes (a Delivery).
type weighed interface{ batchBytes() int }

// nextBatchLen is how many queued calls the next batch takes: at most limit, and of items
// that weigh their bytes no more than MaxClaimBatchBytes together, but always one. Called
// with b.mu held.
func (b *Batcher[T, R]) nextBatchLen() int {
	n := min(len(b.queue), b.limit())
	total := 0
	for i, c := range b.queue[:n] {
		w, ok := any(&c.item).(weighed)
		if !ok {
			return n
		}
		if total += w.batchBytes(); total > MaxClaimBatchBytes && i > 0 {
			return i
		}
	}
	return n
}

// batchBytes is what d adds to its claim batch's statement, near enough: its body, headers
// and URL.
func (d *Delivery) batchBytes() int {
	n := len(d.Body) + len(d.URL)
	for _, h := range d.Headers {
		n += len(h.Name) + len(h.Value)
	}
	return n
}

// limit is how many items one batch may hold.
func (b *Batcher[T, R]) limit() int {
	if b.Limit > 0 {
		return b.Limit
	}
	return MaxClaimBatch
}

// withdraw removes a caller that gave up while still queued; false if it is no longer queued.
func (b *Batcher[T, R]) withdraw(c *batchCall[T, R]) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == c {
			if i == 0 {
				select {
				case <-q.lead:
					// Handed the lead already: it must lead, or the queue behind it stalls.
					return false
				default:
					// Not yet, and the lead is only ever handed on under b.mu: the leader
					// will hand it to whoever is at the head once this one is gone.
				}
			}
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			return true
		}
	}
	return false
}

func (b *Batcher[T, R]) commit(batch []*batchCall[T, R], commit Commit[T, R]) {
	items := make([]T, len(batch))
	for i, c := range batch {
		items[i] = c.item
	}
	results, errs, err := runCommit(commit, items)
	b.mu.Lock()
	if err == nil {
		b.batches++
	}
	b.committing = 0
	b.mu.Unlock()
	for i, c := range batch {
		switch {
		case err != nil:
			c.err = err
		case errs[i] != nil:
			c.err = errs[i]
		default:
			c.res = results[i]
		}
		close(c.done)
	}
}

// runCommit calls commit. One that panics fails its batch like any failed commit, rather than
// leaving every caller of the batch, and the queue behind it, waiting for ever. Whether its
// transaction committed is unknown, so the callers retry (a retried claim then finds its
// identity claimed, a retried ack its lease settled). The panic and its stack go into the
// error, which the server logs, as its handlers' own panics are. One that answers for fewer or
// more items than it was given fails the batch too.
func runCommit[T, R any](commit Commit[T, R], items []T) (results []R, errs []error, err error) {
	defer func() {
		if r := recover(); r != nil {
			results, errs, err = nil, nil, fmt.Errorf("storage: a batch commit panicked: %v\n%s", r, debug.Stack())
		}
	}()
	results, errs, err = commit(items)
	if err == nil && (len(results) != len(items) || len(errs) != len(items)) {
		err = fmt.Errorf("storage: a batch commit answered %d results and %d errors for %d items", len(results), len(errs), len(items))
	}
	return results, errs, err
}

// ClaimBatcher is group commit for claims, shared by the backends: a Batcher of deliveries,
// with batch statistics and a switch to turn it off. A commit is the expensive part of a claim
// (an fsync on SQLite and PostgreSQL, a consensus round on CockroachDB), so concurrent claims
// share one transaction; none is reported accepted unless its batch committed. The zero value
// is ready to use.
type ClaimBatcher struct {
	batcher Batcher[Delivery, ClaimResult]
	// committedAlone counts the claims committed with group commit off.
	committedAlone atomic.Int64
	// each turns group commit off (CommitEachClaim).
	each atomic.Bool
	// observe, when set, is told about every batch (ObserveBatches).
	observe atomic.Pointer[func(ClaimBatchStats)]
}

// ClaimBatchStats describes one batch commit, for metrics: how many claims it held, how long
// the commit took, and whether it committed.
type ClaimBatchStats struct {
	Claims    int
	Took      time.Duration
	Committed bool
}

// ClaimBatchReporter is implemented by stores whose claims go through a ClaimBatcher: f is told
// about every batch (see ClaimBatcher.ObserveBatches).
type ClaimBatchReporter interface {
	ObserveClaimBatches(f func(ClaimBatchStats))
}

// ObserveBatches has f called after every batch commit (or failure), from the goroutine that
// committed it, so f must be quick; it replaces any observer set before. With group commit off
// each claim is a batch of one. The sum of Took over a second is the share of that second the
// claim pipeline was busy: near 1, claims queue behind the batch in flight and the database's
// commit and row costs set the pace.
func (b *ClaimBatcher) ObserveBatches(f func(ClaimBatchStats)) { b.observe.Store(&f) }

// timeCommit runs commit on batch and reports it to the observer, if any.
func (b *ClaimBatcher) timeCommit(batch []Delivery, commit CommitBatch) ([]ClaimResult, []error, error) {
	observe := b.observe.Load()
	if observe == nil {
		return commit(batch)
	}
	start := time.Now()
	results, errs, err := commit(batch)
	(*observe)(ClaimBatchStats{Claims: len(batch), Took: time.Since(start), Committed: err == nil})
	return results, errs, err
}

// CommitEachClaim turns group commit off: from now on every claim commits alone, in its own
// transaction, at once and concurrently with the others, as claims did before group commit.
// It exists to measure what group commit gains (`hookverify serve --commit-each-claim`).
func (b *ClaimBatcher) CommitEachClaim() { b.each.Store(true) }

// CommitBatch commits the deliveries as one transaction, in order, and returns each one's
// result or its own error (an inbox id reused, say), or an error for the whole batch when the
// transaction did not commit.
type CommitBatch = Commit[Delivery, ClaimResult]

// Batches reports how many batch transactions committed (for tests and curiosity).
func (b *ClaimBatcher) Batches() int64 { return b.batcher.Batches() + b.committedAlone.Load() }

// Submit queues d and returns its outcome once its batch committed (or failed); see
// Batcher.Submit.
func (b *ClaimBatcher) Submit(ctx context.Context, d Delivery, commit CommitBatch) (ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return ClaimResult{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if b.each.Load() {
		results, errs, err := b.timeCommit([]Delivery{d}, commit)
		if err != nil {
			return ClaimResult{}, err
		}
		b.committedAlone.Add(1)
		if errs[0] != nil {
			return ClaimResult{}, errs[0]
		}
		return results[0], nil
	}
	return b.batcher.Submit(ctx, d, func(batch []Delivery) ([]ClaimResult, []error, error) {
		return b.timeCommit(batch, commit)
	})
}
