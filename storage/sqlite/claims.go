package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/hookverify/hookverify/storage"
)

// claimAttempts bounds how often Claim tries a transaction that failed to begin or commit.
// A commit whose outcome is unknown (an I/O error while syncing, say) is settled by the next
// attempt, which finds the claim held by the same inbox id and reports it accepted.
const claimAttempts = 2

// Claim claims (d.Scope, d.EventID) and stores d as its inbox record in one transaction.
func (s *Store) Claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	if err := validateDelivery(d); err != nil {
		return storage.ClaimResult{}, s.fail("claim", err)
	}
	var err error
	for range claimAttempts {
		var res storage.ClaimResult
		res, err = s.claimOnce(ctx, d)
		if err == nil || !errors.Is(err, storage.ErrUnavailable) || ctx.Err() != nil {
			return res, err
		}
	}
	return storage.ClaimResult{}, err
}

// CommitEachClaim turns group commit off: every claim then commits alone, in its own
// transaction on the single writer (see storage.ClaimBatcher.CommitEachClaim). Call it
// before the store is used.
func (s *Store) CommitEachClaim() { s.claims.CommitEachClaim() }

// NewInboxID returns a time-ordered inbox id (see storage.InboxIDSource).
func (s *Store) NewInboxID() string { return storage.TimeOrderedInboxID() }

// ObserveClaimBatches has f told about every claim batch (see
// storage.ClaimBatcher.ObserveBatches). Safe to call while claims run.
func (s *Store) ObserveClaimBatches(f func(storage.ClaimBatchStats)) { s.claims.ObserveBatches(f) }

// claimOnce queues the claim for the next group commit (storage.ClaimBatcher: one
// transaction, so one fsync, for every claim queued meanwhile) and waits for its outcome.
func (s *Store) claimOnce(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	res, err := s.claims.Submit(ctx, d, s.commitClaims)
	if err != nil {
		return storage.ClaimResult{}, s.fail("claim", err)
	}
	return res, nil
}

// Statements of the claim path, prepared once on the writer connection (see claimStmts).
const (
	selectClaimSQL = `SELECT inbox_id, operation_key, first_received_at FROM claims
		WHERE scope = ? AND event_id = ?`
	insertClaimSQL = `INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
		VALUES (?, ?, ?, ?, ?)`
	insertInboxSQL = `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id,
		method, url, headers, body, received_at, state, attempts, visible_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?)`
	countPendingSQL = `INSERT INTO inbox_pending (endpoint_id, n) VALUES (?, ?)
		ON CONFLICT (endpoint_id) DO UPDATE SET n = n + excluded.n`
)

// claimStmts are the claim path's prepared statements (and addPending's): parsing them anew
// for every claim cost more than running them.
type claimStmts struct {
	selectClaim, insertClaim, insertInbox, countPending *sql.Stmt
	// inserted counts the inbox records a batch's transaction added, per endpoint: the batch
	// adds them to inbox_pending before it commits (migration 25).
	inserted map[string]int64
}

func prepareClaimStmts(ctx context.Context, db *sql.DB) (*claimStmts, error) {
	var c claimStmts
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&c.selectClaim, selectClaimSQL}, {&c.insertClaim, insertClaimSQL}, {&c.insertInbox, insertInboxSQL}, {&c.countPending, countPendingSQL}} {
		stmt, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			c.close()
			return nil, err
		}
		*p.stmt = stmt
	}
	return &c, nil
}

func (c *claimStmts) close() {
	for _, stmt := range []*sql.Stmt{c.selectClaim, c.insertClaim, c.insertInbox, c.countPending} {
		if stmt != nil {
			_ = stmt.Close()
		}
	}
}

// commitClaims first reads, without the write lock, which identities of the batch are claimed
// already: a batch of redeliveries is answered by that read alone. The others are claimed in
// one write transaction. The transaction holds the write lock, so what a claim reads there
// stays true until it writes; and a claim that fails on its own (an inbox id reused) fails in
// its first write, a statement SQLite rolls back alone, so it needs no savepoint. A later claim
// of an identity claimed earlier in the batch sees that claim and is a duplicate of it.
func (s *Store) commitClaims(batch []storage.Delivery) ([]storage.ClaimResult, []error, error) {
	// The batch outlives any one caller's context; the busy timeout bounds it.
	ctx := context.Background()
	results := make([]storage.ClaimResult, len(batch))
	errs := make([]error, len(batch))
	known, err := s.knownClaims(ctx, batch)
	if err != nil {
		return nil, nil, s.fail("claim", unavailable(err))
	}
	var fresh []int
	for i, d := range batch {
		if c, ok := known[identity{d.Scope, d.EventID}]; ok {
			c.Accepted = c.InboxID == d.InboxID
			results[i] = c
		} else {
			fresh = append(fresh, i)
		}
	}
	if len(fresh) == 0 {
		// Answered by the read alone, which the open files still serve once deleted: a
		// DUPLICATE (or an accepted retry) says "stored", which a deleted database file no
		// longer is at the next start, nor a deleted log's content until it is copied into
		// the database file (filesGone does). So the answer is refused, as a write would be.
		if err := s.filesGone(); err != nil {
			return nil, nil, s.fail("claim", unavailable(err))
		}
		return results, errs, nil
	}
	err = s.writeClaims(ctx, func(tx *sql.Tx) error {
		c := claimStmts{
			selectClaim: tx.StmtContext(ctx, s.stmts.selectClaim),
			insertClaim: tx.StmtContext(ctx, s.stmts.insertClaim),
			insertInbox: tx.StmtContext(ctx, s.stmts.insertInbox),
			inserted:    make(map[string]int64, 1),
		}
		for _, i := range fresh {
			var err error
			results[i], err = c.claim(ctx, batch[i])
			if errors.As(err, new(claimOwnError)) {
				errs[i] = s.fail("claim", err)
				continue
			}
			if err != nil {
				return err
			}
		}
		return s.addPending(ctx, tx, c.inserted)
	})
	return results, errs, err
}

// identity is the key of a claim.
type identity struct{ scope, eventID string }

// knownClaims reads the claims held for the batch's identities, in one statement on the
// read-only pool.
func (s *Store) knownClaims(ctx context.Context, batch []storage.Delivery) (map[identity]storage.ClaimResult, error) {
	stmt, size, err := s.lookups.forBatch(ctx, s.reader, len(batch))
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 2*size)
	for _, d := range batch {
		args = append(args, d.Scope, d.EventID)
	}
	for len(args) < 2*size {
		// Padding repeats the last identity, which changes nothing in an IN list.
		args = append(args, args[len(args)-2], args[len(args)-1])
	}
	rows, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	known := make(map[identity]storage.ClaimResult)
	for rows.Next() {
		var k identity
		var c storage.ClaimResult
		var first int64
		if err := rows.Scan(&k.scope, &k.eventID, &c.InboxID, &c.OperationKey, &first); err != nil {
			return nil, err
		}
		c.FirstReceivedAt = fromMicros(first)
		known[k] = c
	}
	return known, rows.Err()
}

// lookupStmts are the prepared statements of knownClaims, one per batch size rounded up to a
// power of two: preparing the statement anew for every batch cost more than running it.
type lookupStmts struct {
	mu     sync.Mutex
	bySize map[int]*sql.Stmt
}

// forBatch returns the statement for a batch of n identities and the number it takes.
func (l *lookupStmts) forBatch(ctx context.Context, db *sql.DB, n int) (*sql.Stmt, int, error) {
	size := 1
	for size < n {
		size *= 2
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if stmt, ok := l.bySize[size]; ok {
		return stmt, size, nil
	}
	stmt, err := db.PrepareContext(ctx, `SELECT scope, event_id, inbox_id, operation_key, first_received_at
		FROM claims WHERE (scope, event_id) IN (VALUES (?, ?)`+strings.Repeat(", (?, ?)", size-1)+`)`)
	if err != nil {
		return nil, 0, err
	}
	if l.bySize == nil {
		l.bySize = make(map[int]*sql.Stmt)
	}
	l.bySize[size] = stmt
	return stmt, size, nil
}

func (l *lookupStmts) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, stmt := range l.bySize {
		_ = stmt.Close()
	}
	clear(l.bySize)
}

// claimOwnError marks the failure of one claim that leaves the rest of the batch unharmed.
type claimOwnError struct{ error }

func (e claimOwnError) Unwrap() error { return e.error }

// claim claims d with the statements of the batch's transaction, which holds the write lock.
func (c claimStmts) claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	var res storage.ClaimResult
	var first int64
	err := c.selectClaim.QueryRowContext(ctx, d.Scope, d.EventID).Scan(&res.InboxID, &res.OperationKey, &first)
	if err == nil {
		res.FirstReceivedAt = fromMicros(first)
		// Held by our own inbox id: an earlier attempt of this very claim committed.
		res.Accepted = res.InboxID == d.InboxID
		return res, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return res, err
	}
	// The inbox record first: if its id is taken, nothing at all was written for this claim.
	_, err = c.insertInbox.ExecContext(ctx, d.InboxID, d.Scope, d.EventID, d.EndpointID, d.OperationKey,
		d.SecretID, d.Method, d.URL, storage.EncodeHeaders(d.Headers), nonNil(d.Body), micros(d.ReceivedAt),
		micros(d.ReceivedAt))
	if se, ok := errors.AsType[*sqlite.Error](err); ok && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT {
		return storage.ClaimResult{}, claimOwnError{fmt.Errorf("inbox record %q: %w", d.InboxID, err)}
	}
	if err != nil {
		return storage.ClaimResult{}, fmt.Errorf("inbox record %q: %w", d.InboxID, err)
	}
	if _, err := c.insertClaim.ExecContext(ctx, d.Scope, d.EventID, d.InboxID, d.OperationKey, micros(d.ReceivedAt)); err != nil {
		// The read above found no claim and the write lock kept others out: the batch is broken.
		return storage.ClaimResult{}, err
	}
	c.inserted[d.EndpointID]++
	return storage.ClaimResult{
		Accepted:        true,
		InboxID:         d.InboxID,
		OperationKey:    d.OperationKey,
		FirstReceivedAt: fromMicros(micros(d.ReceivedAt)),
	}, nil
}

func validateDelivery(d storage.Delivery) error {
	var missing []string
	for _, f := range []struct{ name, value string }{
		{"InboxID", d.InboxID},
		{"Scope", d.Scope},
		{"EventID", d.EventID},
		{"EndpointID", d.EndpointID},
		{"OperationKey", d.OperationKey},
	} {
		if f.value == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("delivery without %s: %w", strings.Join(missing, ", "), storage.ErrInvalid)
	}
	return nil
}

// GetDelivery returns the inbox record with the id, or ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, inboxID string) (storage.Delivery, error) {
	var d storage.Delivery
	err := s.read("get delivery", func(q queryer) error {
		var (
			headers    []byte
			receivedAt int64
		)
		err := q.QueryRowContext(ctx, `SELECT id, scope, event_id, endpoint_id, operation_key, secret_id, method,
			url, headers, body, received_at FROM inbox WHERE id = ?`, inboxID).Scan(
			&d.InboxID, &d.Scope, &d.EventID, &d.EndpointID, &d.OperationKey, &d.SecretID, &d.Method, &d.URL,
			&headers, &d.Body, &receivedAt)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("inbox record %q: %w", inboxID, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if d.Headers, err = storage.DecodeHeaders(headers); err != nil {
			return fmt.Errorf("inbox record %q: %w", inboxID, err)
		}
		d.ReceivedAt = fromMicros(receivedAt)
		return nil
	})
	if err != nil {
		return storage.Delivery{}, err
	}
	return d, nil
}

// CountDeliveries returns how many inbox records the scope has, or all scopes together if
// scope is empty.
func (s *Store) CountDeliveries(ctx context.Context, scope string) (int64, error) {
	var n int64
	err := s.read("count deliveries", func(q queryer) error {
		if scope == "" {
			return q.QueryRowContext(ctx, `SELECT count(*) FROM inbox`).Scan(&n)
		}
		return q.QueryRowContext(ctx, `SELECT count(*) FROM inbox WHERE scope = ?`, scope).Scan(&n)
	})
	return n, err
}
