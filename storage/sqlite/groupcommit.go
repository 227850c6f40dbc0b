package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/hookverify/hookverify/storage"
)

// maxClaimBatch bounds how many claims share one transaction, so one commit never holds the
// write lock for long.
const maxClaimBatch = 128

// claimBatcher is group commit for claims. SQLite commits one transaction at a time and each
// commit costs an fsync (synchronous=FULL), so concurrent claims queue here and the first of
// them, the leader, commits everything queued in one transaction: one fsync for the batch. An
// idle store adds no latency: a lone claim is its own batch at once. Every caller is answered
// only after the transaction holding its claim has committed; if the commit fails, every claim
// of the batch fails with ErrUnavailable, and none is reported accepted.
type claimBatcher struct {
	mu      sync.Mutex
	queue   []*claimCall
	leading bool
	// batches counts committed transactions (for tests and curiosity).
	batches int64
}

type claimCall struct {
	d    storage.Delivery
	res  storage.ClaimResult
	err  error
	done chan struct{}
	// lead is closed to hand this waiting caller the leader's role.
	lead chan struct{}
}

// submit queues d and returns its outcome once committed (or failed).
func (b *claimBatcher) submit(ctx context.Context, s *Store, d storage.Delivery) (storage.ClaimResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.ClaimResult{}, s.fail("claim", unavailable(err))
	}
	c := &claimCall{d: d, done: make(chan struct{}), lead: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, c)
	lead := !b.leading
	b.leading = true
	b.mu.Unlock()
	if !lead {
		select {
		case <-c.done:
			return c.res, c.err
		case <-c.lead:
		case <-ctx.Done():
			if b.withdraw(c) {
				return storage.ClaimResult{}, s.fail("claim", unavailable(ctx.Err()))
			}
			// Already taken into a batch, or handed the lead: see it through.
			select {
			case <-c.done:
				return c.res, c.err
			case <-c.lead:
			}
		}
	}
	// Leading: commit one batch (which holds our own claim: we are first in the queue or were
	// handed the lead as its first), then pass the lead on to the next queued caller.
	b.mu.Lock()
	n := min(len(b.queue), maxClaimBatch)
	batch := b.queue[:n:n]
	b.queue = b.queue[n:]
	b.mu.Unlock()
	b.commit(s, batch)
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

// withdraw removes a caller that gave up while still queued; false if it is no longer queued.
func (b *claimBatcher) withdraw(c *claimCall) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == c {
			if i == 0 {
				// The head may be handed the lead at any moment; let it lead instead.
				return false
			}
			b.queue = append(b.queue[:i:i], b.queue[i+1:]...)
			return true
		}
	}
	return false
}

// commit runs every claim of the batch in one transaction, each inside a savepoint so that one
// claim's failure (an inbox id reused, say) rolls back only that claim.
func (b *claimBatcher) commit(s *Store, batch []*claimCall) {
	// The batch outlives any one caller's context; database/sql bounds it by busy_timeout.
	ctx := context.Background()
	results := make([]storage.ClaimResult, len(batch))
	errs := make([]error, len(batch))
	err := s.write(ctx, "claim", func(tx *sql.Tx) error {
		for i, c := range batch {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT claim"); err != nil {
				return err
			}
			results[i], errs[i] = claimInTx(ctx, tx, c.d)
			undo := "RELEASE claim"
			if errs[i] != nil {
				undo = "ROLLBACK TO claim; RELEASE claim"
			}
			if _, err := tx.ExecContext(ctx, undo); err != nil {
				return fmt.Errorf("ending the savepoint: %w", err)
			}
		}
		return nil
	})
	b.mu.Lock()
	if err == nil {
		b.batches++
	}
	b.mu.Unlock()
	for i, c := range batch {
		switch {
		case err != nil:
			c.err = err
		case errs[i] != nil:
			c.err = s.fail("claim", errs[i])
		default:
			c.res = results[i]
		}
		close(c.done)
	}
}
