package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hookverify/hookverify/storage"
)

var (
	_ storage.InboxStore     = (*Store)(nil)
	_ storage.RetentionStore = (*Store)(nil)
)

// leasedColumns are the inbox columns a storage.LeasedDelivery is read from, in scanLeased's
// order.
const leasedColumns = `id, scope, event_id, endpoint_id, operation_key, secret_id, method, url, headers,
	body, received_at, state, attempts, lease_token, leased_until, visible_at, last_error`

// maxInlineFilter is the longest list of a filter bound one value per parameter. A longer
// one is bound as a single JSON array: SQLite refuses a statement with more than 32,766
// parameters, and a lease's statements repeat its lists in several branches, so a worker
// naming some thousands of endpoints would fail its lease with a confusing UNAVAILABLE, and
// with it every lease sharing its transaction.
const maxInlineFilter = 100

// filterSQL returns the conditions (each starting with AND) that restrict a query to f, and
// appends their arguments to args. A delivery must match every non-empty list.
func filterSQL(f storage.InboxFilter, args *[]any) string {
	var b strings.Builder
	for _, c := range []struct {
		column string
		values []string
	}{{"endpoint_id", f.EndpointIDs}, {"scope", f.Scopes}} {
		switch {
		case len(c.values) == 0:
			continue
		case len(c.values) > maxInlineFilter:
			list, _ := json.Marshal(c.values) // cannot fail for strings
			b.WriteString(" AND " + c.column + " IN (SELECT value FROM json_each(?))")
			*args = append(*args, string(list))
			continue
		}
		b.WriteString(" AND " + c.column + " IN (?" + strings.Repeat(", ?", len(c.values)-1) + ")")
		for _, v := range c.values {
			*args = append(*args, v)
		}
	}
	return b.String()
}

func validLease(req storage.LeaseRequest) error {
	switch {
	case req.Max < 1:
		return fmt.Errorf("%w: lease Max %d, want at least 1", storage.ErrInvalid, req.Max)
	case req.MaxAttempts < 1:
		return fmt.Errorf("%w: lease MaxAttempts %d, want at least 1", storage.ErrInvalid, req.MaxAttempts)
	case req.Visibility <= 0:
		return fmt.Errorf("%w: lease Visibility %v, want more than zero", storage.ErrInvalid, req.Visibility)
	case req.LeaseToken == "":
		return fmt.Errorf("%w: empty lease token", storage.ErrInvalid)
	}
	return nil
}

// Lease moves expired leases that used their attempts to dead, then leases up to req.Max
// leasable deliveries, in one write transaction. The write lock taken at BEGIN keeps every
// other lease out until the commit, so no row can be leased twice, and lets the candidates be
// picked (with their state, to tell an expired lease from a pending delivery) before the
// UPDATE that leases them.
//
// Concurrent leases share that transaction, as claims and acks do (storage.Batcher): each
// lease runs its statements in turn, seeing what the ones before it leased, and every caller
// is answered after the one commit. With a commit of its own per lease, 16 workers drained
// 2,660-2,995 deliveries a second while 3,000-3,600 came in; sharing, they kept up
// (BENCHMARKS.md, tenth session).
func (s *Store) Lease(ctx context.Context, req storage.LeaseRequest) (storage.LeaseResult, error) {
	if err := validLease(req); err != nil {
		return storage.LeaseResult{}, s.fail("lease", err)
	}
	// The pre-check reads the clock now; the lease reads it again when its batch runs.
	if idle, err := s.nothingToLease(ctx, req, micros(req.Time())); err != nil || idle {
		return storage.LeaseResult{}, err
	}
	// The statements' texts, prepared by the batch; their arguments are bound to the time the
	// batch runs at (leaseIn).
	call := leaseCall{req: req}
	call.deadSQL, _ = deadLetterExpired(req, 0)
	call.pickSQL, _ = pickLeasable(req, 0)
	result, err := s.leases.Submit(ctx, call, s.commitLeases)
	if err != nil {
		return storage.LeaseResult{}, s.fail("lease", err)
	}
	sortLeased(result.Deliveries)
	return result, nil
}

// leaseCall is one Lease waiting to share a commit (Store.leases): its request, and the
// texts of its statements that depend on it (deadLetterExpired and pickLeasable; leaseSQL
// then leases what was picked).
type leaseCall struct {
	req              storage.LeaseRequest
	deadSQL, pickSQL string
}

// leaseExpiredError is the last error of a delivery whose last attempt's lease expired, for a
// lease and for DeadLetterExhausted with ExpiredLeases alike: the cause, then the error the
// delivery held before, if any (the worker's nack of an earlier attempt says what failed).
const leaseExpiredError = `'lease expired' || coalesce('; last error: ' || nullif(last_error, ''), '')`

// deadLetterExpired returns the statement, and its arguments, that moves every delivery
// matching req's filter whose lease expired by now and which used req.MaxAttempts attempts
// to dead. The worker's last error is kept after the cause: it says what failed.
func deadLetterExpired(req storage.LeaseRequest, now int64) (string, []any) {
	args := []any{now, now, req.MaxAttempts}
	return `UPDATE inbox SET state = 'dead', dead_at = ?, lease_token = NULL,
		leased_until = NULL, last_error = ` + leaseExpiredError + `
		WHERE state = 'leased' AND leased_until <= ? AND attempts >= ?` + filterSQL(req.InboxFilter, &args), args
}

// commitLeases runs a batch of leases in one write transaction, in order. A failure fails
// the batch: nothing of it is leased, and every caller may lease again. Except when a lease
// meets a record it cannot read back: that lease fails alone, and the others run again
// without it (storage.WithoutUnreadableLeases).
func (s *Store) commitLeases(batch []leaseCall) ([]storage.LeaseResult, []error, error) {
	// The batch outlives any one caller's context; the busy timeout bounds it.
	ctx := context.Background()
	// Prepared by the leader, not by each caller: a caller preparing a new text would wait
	// for the writer connection, held by the batch before it, and so join a batch later.
	stmts := map[string]*sql.Stmt{}
	for _, call := range batch {
		for _, text := range []string{call.deadSQL, call.pickSQL, leaseSQL} {
			if stmts[text] != nil {
				continue
			}
			stmt, done, err := s.prepared(ctx, text)
			if err != nil {
				return nil, nil, unavailable(err)
			}
			defer done()
			stmts[text] = stmt
		}
	}
	results := make([]storage.LeaseResult, len(batch))
	errs := make([]error, len(batch))
	err := storage.WithoutUnreadableLeases(errs, func() (failed int, err error) {
		failed = -1
		err = s.inWriteTx(ctx, func(tx *sql.Tx) error {
			clear(results)
			left := map[string]int64{}
			for i, call := range batch {
				if errs[i] != nil {
					continue
				}
				var err error
				if results[i], err = leaseIn(ctx, tx, call, stmts, left); err != nil {
					failed = i
					return err
				}
			}
			return s.addPending(ctx, tx, left)
		})
		return failed, err
	})
	if err != nil {
		return nil, nil, err
	}
	return results, errs, nil
}

// leaseIn runs one lease's statements, prepared in stmts by text, in tx and counts the pending deliveries it took, by
// endpoint, into left.
func leaseIn(ctx context.Context, tx *sql.Tx, call leaseCall, stmts map[string]*sql.Stmt, left map[string]int64) (storage.LeaseResult, error) {
	var result storage.LeaseResult
	// The time of the lease is read here, with the write lock held: not when the lease was
	// queued, which may have been up to the busy timeout before (storage.LeaseRequest.Clock).
	at := call.req.Time()
	_, deadArgs := deadLetterExpired(call.req, micros(at))
	_, pickArgs := pickLeasable(call.req, micros(at))
	dead, err := tx.StmtContext(ctx, stmts[call.deadSQL]).ExecContext(ctx, deadArgs...)
	if err != nil {
		return result, fmt.Errorf("dead-letter expired leases: %w", err)
	}
	if result.ExpiredToDead, err = dead.RowsAffected(); err != nil {
		return result, err
	}
	expired, err := pickedLeasable(tx.StmtContext(ctx, stmts[call.pickSQL]).QueryContext(ctx, pickArgs...))
	if err != nil || len(expired) == 0 {
		return result, err
	}
	ids := make([]string, 0, len(expired))
	for id := range expired {
		ids = append(ids, id)
	}
	idList, err := json.Marshal(ids)
	if err != nil {
		return result, err
	}
	rows, err := tx.StmtContext(ctx, stmts[leaseSQL]).QueryContext(ctx, call.req.LeaseToken,
		micros(at.Add(call.req.Visibility)), string(idList))
	if err != nil {
		return result, err
	}
	if result.Deliveries, err = collectLeased(rows); err != nil {
		return result, err
	}
	for i, d := range result.Deliveries {
		result.Deliveries[i].PreviousLeaseExpired = expired[d.InboxID]
		if !expired[d.InboxID] {
			left[d.EndpointID]--
		}
	}
	return result, nil
}

// nothingToLease reports, from the read-only pool, whether a lease at now would find nothing
// to do: no due pending delivery and no expired lease (to take over or to dead-letter) that
// matches req's filter. Workers poll: an empty inbox answered this way costs no turn of the
// one writer, which new deliveries' claim batches wait for (writerTurns). The check is
// conservative (a pending delivery that used its attempts counts as something to do, until
// the server's start moves it to dead: DeadLetterExhausted) and sees what was committed
// before it, as a lease an instant earlier would.
func (s *Store) nothingToLease(ctx context.Context, req storage.LeaseRequest, now int64) (bool, error) {
	probe := req
	probe.Max, probe.MaxAttempts = 1, math.MaxInt32
	query, args := pickLeasable(probe, now)
	var found bool
	err := s.read("lease", func(q queryer) error {
		rows, err := q.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		found = rows.Next()
		return rows.Err()
	})
	return !found && err == nil, err
}

// leaseSQL leases the deliveries whose ids the JSON array holds: one text, and so one
// prepared statement, whatever their number.
const leaseSQL = `UPDATE inbox SET state = 'leased', lease_token = ?, leased_until = ?, attempts = attempts + 1
	WHERE id IN (SELECT value FROM json_each(?))
	RETURNING ` + leasedColumns

// pickLeasable returns the query, and its arguments, of the deliveries a lease at now takes:
// up to req.Max of those leasable, oldest VisibleAt first, each with whether it was still
// leased (its lease having expired) rather than pending.
func pickLeasable(req storage.LeaseRequest, now int64) (string, []any) {
	// Pending deliveries and expired leases are picked apart, each in the order of the
	// (state, visible_at, id) index, or of (state, endpoint_id, visible_at, id), and only as
	// many as the lease takes, then merged. One WHERE with (pending OR expired) made SQLite
	// collect and sort every pending delivery first: 0.5 s per lease with 137,000 waiting,
	// just when workers must catch up. A filter by endpoint is picked one endpoint at a
	// time: see storage.InboxFilter.ByEndpoint.
	var args []any
	var branches []string
	for _, due := range []struct {
		isLeased  int
		condition string
	}{{0, "state = 'pending' AND visible_at <= ?"}, {1, "state = 'leased' AND leased_until <= ?"}} {
		for _, f := range req.ByEndpoint() {
			args = append(args, now, req.MaxAttempts)
			filter := filterSQL(f, &args)
			args = append(args, req.Max)
			branches = append(branches, fmt.Sprintf(`SELECT * FROM (SELECT id, visible_at, %d AS was_leased,
				length(body) + length(headers) + length(CAST(url AS BLOB)) AS size FROM inbox
				WHERE %s AND attempts < ?%s ORDER BY visible_at, id LIMIT ?)`, due.isLeased, due.condition, filter))
		}
	}
	// Taken while the sizes add up to req.MaxBytes, the oldest whatever its size (a prefix:
	// once the running total is over, it stays over). length reads a blob's size from its
	// record header, not its overflow pages.
	budget := req.MaxBytes
	if budget <= 0 {
		budget = math.MaxInt64
	}
	args = append(args, budget, req.Max)
	return `SELECT id, was_leased FROM (
			SELECT id, was_leased, visible_at, row_number() OVER (ORDER BY visible_at, id) AS n,
				sum(size) OVER (ORDER BY visible_at, id) AS running
			FROM (` + strings.Join(branches, ` UNION ALL `) + `))
		WHERE n = 1 OR running <= ?
		ORDER BY visible_at, id LIMIT ?`, args
}

// pickedLeasable reads pickLeasable's answer: each id, with whether its lease had expired.
func pickedLeasable(rows *sql.Rows, err error) (map[string]bool, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	expired := make(map[string]bool)
	for rows.Next() {
		var id string
		var wasLeased bool
		if err := rows.Scan(&id, &wasLeased); err != nil {
			return nil, err
		}
		expired[id] = wasLeased
	}
	return expired, rows.Err()
}

// sortLeased orders deliveries by VisibleAt, then id.
func sortLeased(list []storage.LeasedDelivery) {
	slices.SortFunc(list, func(a, b storage.LeasedDelivery) int {
		if c := a.VisibleAt.Compare(b.VisibleAt); c != 0 {
			return c
		}
		return strings.Compare(a.InboxID, b.InboxID)
	})
}

// onLiveLease is the condition of Ack, Nack and ExtendLease, on the parameters inbox id, lease
// token and now: the delivery is leased under the token and the lease has not expired.
const onLiveLease = `id = ? AND lease_token = ? AND state = 'leased' AND leased_until > ?`

// settle runs update, a statement on the delivery's live lease that reports whether it
// matched a row, in a write transaction. When it did not, settle says why (missedLease).
func (s *Store) settle(ctx context.Context, op, inboxID string, update func(tx *sql.Tx) (bool, error)) error {
	return s.write(ctx, op, func(tx *sql.Tx) error {
		matched, err := update(tx)
		if err != nil || matched {
			return err
		}
		return missedLease(ctx, tx, inboxID)
	})
}

// missedLease says why a statement on the live lease of a delivery matched no row: the
// delivery does not exist (ErrNotFound), was acked (ErrAlreadyAcked), or is not leased under
// that token any more (ErrLeaseLost). Any other error is the transaction's.
func missedLease(ctx context.Context, tx *sql.Tx, inboxID string) error {
	var state string // "" when there is no row
	err := tx.QueryRowContext(ctx, `SELECT state FROM inbox WHERE id = ?`, inboxID).Scan(&state)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	return storage.MissedLease(inboxID, state)
}

// ackCall is one Ack waiting to share a commit (Store.acks).
type ackCall struct {
	inboxID, leaseToken string
	now                 int64
}

// Ack marks a delivery leased under leaseToken done.
//
// Concurrent acks share one write transaction, as claims do (storage.Batcher): each was a
// commit, an fsync, of its own, and with the one writer eight workers acked no faster than
// one (BENCHMARKS.md). Each ack still gets its own answer, and none before its batch commits.
func (s *Store) Ack(ctx context.Context, inboxID, leaseToken string, now time.Time) error {
	_, err := s.acks.Submit(ctx, ackCall{inboxID, leaseToken, micros(now)}, s.commitAcks)
	return s.fail("ack", err)
}

// AckMany acks each delivery as Ack would, the acks queued together for one commit.
func (s *Store) AckMany(ctx context.Context, acks []storage.LeaseRef, now time.Time) []error {
	calls := make([]ackCall, len(acks))
	for i, a := range acks {
		calls[i] = ackCall{a.InboxID, a.LeaseToken, micros(now)}
	}
	_, errs := s.acks.SubmitAll(ctx, calls, s.commitAcks)
	for i, err := range errs {
		errs[i] = s.fail("ack", err)
	}
	return errs
}

// ackSQL acks a delivery whose lease is live; its arguments are now, the inbox id, the lease
// token and now again.
const ackSQL = `UPDATE inbox SET state = 'acked', acked_at = ?, lease_token = NULL, leased_until = NULL
	WHERE ` + onLiveLease

// commitAcks acks a batch in one write transaction. An ack of a missing delivery or a lost
// lease fails alone; any other failure fails the batch.
func (s *Store) commitAcks(batch []ackCall) ([]struct{}, []error, error) {
	// The batch outlives any one caller's context; the busy timeout bounds it.
	ctx := context.Background()
	errs := make([]error, len(batch))
	stmt, done, err := s.prepared(ctx, ackSQL)
	if err != nil {
		return nil, nil, unavailable(err)
	}
	defer done()
	err = s.inWriteTx(ctx, func(tx *sql.Tx) error {
		clear(errs)
		ack := tx.StmtContext(ctx, stmt)
		for i, a := range batch {
			matched, err := affected(ack.ExecContext(ctx, a.now, a.inboxID, a.leaseToken, a.now))
			if err != nil {
				return err
			}
			if matched {
				continue
			}
			err = missedLease(ctx, tx, a.inboxID)
			if !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrLeaseLost) {
				return err
			}
			errs[i] = err
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return make([]struct{}, len(batch)), errs, nil
}

// Nack ends a lease early: the delivery is leasable again at retryAt, or dead once it used
// maxAttempts attempts.
func (s *Store) Nack(ctx context.Context, inboxID, leaseToken string, retryAt time.Time, maxAttempts int, lastError string, now time.Time) (bool, error) {
	if maxAttempts < 1 {
		return false, s.fail("nack", fmt.Errorf("%w: maxAttempts %d, want at least 1", storage.ErrInvalid, maxAttempts))
	}
	return s.nack(ctx, "nack", inboxID, leaseToken, retryAt, maxAttempts, lastError, now)
}

// GiveBack ends a lease early without counting its attempt (storage.Inbox.GiveBack).
func (s *Store) GiveBack(ctx context.Context, inboxID, leaseToken string, retryAt time.Time, lastError string, now time.Time) error {
	_, err := s.nack(ctx, "give back", inboxID, leaseToken, retryAt, 0, lastError, now)
	return err
}

// nack is Nack, and GiveBack when maxAttempts is 0: then the lease's attempt is taken back
// (attempts counts the leases taken, so it is at least 1 here) and the delivery cannot die.
func (s *Store) nack(ctx context.Context, op, inboxID, leaseToken string, retryAt time.Time, maxAttempts int, lastError string, now time.Time) (bool, error) {
	giveBack := 0
	if maxAttempts == 0 {
		giveBack, maxAttempts = 1, math.MaxInt
	}
	var dead bool
	err := s.settle(ctx, op, inboxID, func(tx *sql.Tx) (bool, error) {
		dead = false
		var state, endpointID string
		err := tx.QueryRowContext(ctx, `UPDATE inbox SET
			state = CASE WHEN attempts >= ?1 THEN 'dead' ELSE 'pending' END,
			visible_at = CASE WHEN attempts >= ?1 THEN visible_at ELSE ?2 END,
			dead_at = CASE WHEN attempts >= ?1 THEN ?3 END,
			attempts = max(attempts - ?7, 0),
			last_error = ?4, lease_token = NULL, leased_until = NULL
			WHERE id = ?5 AND lease_token = ?6 AND state = 'leased' AND leased_until > ?3
			RETURNING state, endpoint_id`,
			maxAttempts, micros(retryAt), micros(now), storage.StorableText(lastError), inboxID, leaseToken, giveBack).Scan(&state, &endpointID)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		dead = state == storage.StateDead
		if !dead {
			err = s.addPending(ctx, tx, map[string]int64{endpointID: 1})
		}
		return err == nil, err
	})
	if err != nil {
		return false, err
	}
	return dead, nil
}

// ExtendLease moves the end of a live lease to req.Visibility from now, and returns the end
// it stored.
func (s *Store) ExtendLease(ctx context.Context, req storage.ExtendRequest) (time.Time, error) {
	var until int64
	err := s.settle(ctx, "extend lease", req.InboxID, func(tx *sql.Tx) (bool, error) {
		// The time is read here, with the write lock held: not when the call came, which may
		// have been up to the busy timeout before (storage.ExtendRequest.Clock).
		now := req.Time()
		err := tx.QueryRowContext(ctx, `UPDATE inbox SET leased_until = ? WHERE `+onLiveLease+` RETURNING leased_until`,
			micros(now.Add(req.Visibility)), req.InboxID, req.LeaseToken, micros(now)).Scan(&until)
		if errors.Is(err, sql.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return time.Time{}, err
	}
	return fromMicros(until), nil
}

func affected(res sql.Result, err error) (bool, error) {
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ListDeadLetters returns a page of the dead deliveries matching the filter, after the key
// after, oldest VisibleAt (when they last became due) first, then by id (TEXT
// compares bytes here), up to limit and within maxBytes, and whether more follow. The ids are
// picked, with their sizes, before any body is read. One more than the page is picked, so
// that the page can tell whether another follows without reading it, and a page cut by
// maxBytes knows it was cut: more is on every row, true when fewer rows were kept than picked.
func (s *Store) ListDeadLetters(ctx context.Context, filter storage.InboxFilter, after storage.DeadLetterKey, limit int, maxBytes int64) ([]storage.LeasedDelivery, bool, error) {
	if limit < 1 {
		return nil, false, s.fail("list dead letters", fmt.Errorf("%w: limit %d, want at least 1", storage.ErrInvalid, limit))
	}
	if maxBytes <= 0 {
		maxBytes = math.MaxInt64
	}
	var (
		list []storage.LeasedDelivery
		more bool
	)
	err := s.read("list dead letters", func(q queryer) error {
		var args []any
		where := filterSQL(filter, &args)
		if !after.IsZero() {
			// A row value, which SQLite compares in the (state, visible_at, id) index's order.
			where += ` AND (visible_at, id) > (?, ?)`
			args = append(args, micros(after.VisibleAt), after.InboxID)
		}
		args = append(args, limit+1, limit, maxBytes)
		rows, err := q.QueryContext(ctx, `WITH sized AS (
				SELECT id, row_number() OVER (ORDER BY visible_at, id) AS n,
					sum(size) OVER (ORDER BY visible_at, id) AS running
				FROM (SELECT id, visible_at, length(body) + length(headers) + length(CAST(url AS BLOB)) AS size
					FROM inbox WHERE state = 'dead'`+where+` ORDER BY visible_at, id LIMIT ?)
			), picked AS (
				SELECT id FROM sized WHERE n <= ? AND (n = 1 OR running <= ?)
			)
			SELECT `+leasedColumns+`, (SELECT count(*) FROM sized) > (SELECT count(*) FROM picked)
			FROM inbox WHERE id IN (SELECT id FROM picked)
			ORDER BY visible_at, id`, args...)
		if err != nil {
			return err
		}
		list, err = collectLeased(rows, &more)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return list, more, nil
}

// Requeue moves a dead delivery back to pending, visible at now, with no attempts used.
func (s *Store) Requeue(ctx context.Context, inboxID string, now time.Time) error {
	return s.write(ctx, "requeue", func(tx *sql.Tx) error {
		var endpointID string
		err := tx.QueryRowContext(ctx, `UPDATE inbox SET state = 'pending', attempts = 0, visible_at = ?,
			dead_at = NULL, lease_token = NULL, leased_until = NULL WHERE id = ? AND state = 'dead'
			RETURNING endpoint_id`,
			micros(now), inboxID).Scan(&endpointID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("dead inbox record %q: %w", inboxID, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if err := s.addPending(ctx, tx, map[string]int64{endpointID: 1}); err != nil {
			return err
		}
		return recordAudit(storage.WithAuditEndpoint(ctx, endpointID), tx)
	})
}

// Discard settles a dead delivery unrun: acked at now, its reason before its last error.
func (s *Store) Discard(ctx context.Context, inboxID, reason string, now time.Time) error {
	return s.write(ctx, "discard", func(tx *sql.Tx) error {
		var endpointID string
		err := tx.QueryRowContext(ctx, `UPDATE inbox SET state = 'acked', acked_at = ?1,
			last_error = ?2 || coalesce('; last error: ' || nullif(last_error, ''), '')
			WHERE id = ?3 AND state = 'dead' RETURNING endpoint_id`,
			micros(now), storage.StorableText(reason), inboxID).Scan(&endpointID)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("dead inbox record %q: %w", inboxID, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		return recordAudit(storage.WithAuditEndpoint(ctx, endpointID), tx)
	})
}

// DeadLetterExhausted moves up to req.Batch pending deliveries with no attempts left under
// req.MaxAttempts to dead, in one write transaction that also takes them off their
// endpoints' pending counts. With req.ExpiredLeases it moves expired leases with no attempts
// left instead, as a lease does (deadLetterExpired), and no pending count changes.
func (s *Store) DeadLetterExhausted(ctx context.Context, req storage.ExhaustedRequest) (int64, error) {
	switch {
	case req.MaxAttempts < 1:
		return 0, s.fail("dead-letter exhausted", fmt.Errorf("%w: MaxAttempts %d, want at least 1", storage.ErrInvalid, req.MaxAttempts))
	case req.Batch < 1:
		return 0, s.fail("dead-letter exhausted", fmt.Errorf("%w: Batch %d, want at least 1", storage.ErrInvalid, req.Batch))
	}
	var moved int64
	if req.ExpiredLeases {
		err := s.write(ctx, "dead-letter expired leases", func(tx *sql.Tx) error {
			var err error
			moved, err = execAffected(tx.ExecContext(ctx, deadLetterExpiredBatchSQL, micros(req.Now), req.MaxAttempts, req.Batch))
			return err
		})
		if err != nil {
			return 0, err
		}
		return moved, nil
	}
	err := s.write(ctx, "dead-letter exhausted", func(tx *sql.Tx) error {
		moved = 0
		rows, err := tx.QueryContext(ctx, `UPDATE inbox SET state = 'dead', dead_at = ?1,
			last_error = ?2 || coalesce('; last error: ' || nullif(last_error, ''), '')
			WHERE id IN (SELECT id FROM inbox WHERE state = 'pending' AND attempts >= ?3 LIMIT ?4)
			RETURNING endpoint_id`,
			micros(req.Now), req.Reason, req.MaxAttempts, req.Batch)
		if err != nil {
			return err
		}
		defer rows.Close()
		left := map[string]int64{}
		for rows.Next() {
			var endpointID string
			if err := rows.Scan(&endpointID); err != nil {
				return err
			}
			left[endpointID]--
			moved++
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return s.addPending(ctx, tx, left)
	})
	if err != nil {
		return 0, err
	}
	return moved, nil
}

// deadLetterExpiredBatchSQL moves up to ?3 leased deliveries whose lease ended by ?1 and
// which used ?2 attempts or more to dead, as deadLetterExpired does for a lease, whatever
// their endpoint (storage.ExhaustedRequest.ExpiredLeases).
const deadLetterExpiredBatchSQL = `UPDATE inbox SET state = 'dead', dead_at = ?1, lease_token = NULL,
	leased_until = NULL, last_error = ` + leaseExpiredError + `
	WHERE id IN (SELECT id FROM inbox WHERE state = 'leased' AND leased_until <= ?1 AND attempts >= ?2 LIMIT ?3)`

// execAffected returns how many rows the statement whose result it is given changed.
func execAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// addPending adds to the pending count of each endpoint (inbox_pending, migration 25) in tx,
// which must be the transaction that moved that many deliveries into pending (or, negative,
// out of it).
func (s *Store) addPending(ctx context.Context, tx *sql.Tx, byEndpoint map[string]int64) error {
	var stmt *sql.Stmt
	for endpointID, n := range byEndpoint {
		if n == 0 {
			continue
		}
		if stmt == nil {
			stmt = tx.StmtContext(ctx, s.stmts.countPending)
		}
		if _, err := stmt.ExecContext(ctx, endpointID, n); err != nil {
			return fmt.Errorf("count pending deliveries: %w", err)
		}
	}
	return nil
}

// InboxStats counts the deliveries of every endpoint that has any not yet acked.
//
// The pending deliveries, the many when workers fall behind, are not counted here: their
// numbers are read from inbox_pending (migration 25), so the inbox monitor, which calls this
// every second, costs the same with ten of them or a million. Counting them took 22 ms at
// 137,000 and showed in the p99 of the deliveries meanwhile (BENCHMARKS.md). An endpoint's
// oldest pending delivery is one seek in the (state, endpoint_id, visible_at) index; leased
// and dead deliveries are counted along that index, and the leased ones' rows read for their
// earliest leased_until (they are as many as the workers hold, plus leases that ran out with
// no worker left to take them over). One statement: one consistent snapshot.
func (s *Store) InboxStats(ctx context.Context) ([]storage.EndpointInboxStats, error) {
	// The server's monitor reads the stats every second, and its health follows them: a store
	// whose files were deleted under it, or on a file system read-only or full, can read but
	// not write, and must not look healthy.
	if err := s.cannotWrite(); err != nil {
		return nil, s.fail("inbox stats", unavailable(err))
	}
	byEndpoint := map[string]*storage.EndpointInboxStats{}
	err := s.read("inbox stats", func(q queryer) error {
		rows, err := q.QueryContext(ctx, `SELECT p.endpoint_id, 'pending', p.n,
				(SELECT min(i.visible_at) FROM inbox AS i WHERE i.state = 'pending' AND i.endpoint_id = p.endpoint_id)
			FROM inbox_pending AS p WHERE p.n > 0
			UNION ALL
			SELECT endpoint_id, state, count(*), CASE WHEN state = 'leased' THEN min(leased_until) END
			FROM inbox WHERE state IN ('leased', 'dead')
			GROUP BY state, endpoint_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				endpointID, state string
				n                 int64
				// earliest is the oldest pending visible_at, or the earliest leased_until.
				earliest sql.NullInt64
			)
			if err := rows.Scan(&endpointID, &state, &n, &earliest); err != nil {
				return err
			}
			st := byEndpoint[endpointID]
			if st == nil {
				st = &storage.EndpointInboxStats{EndpointID: endpointID}
				byEndpoint[endpointID] = st
			}
			switch state {
			case "pending":
				st.Pending, st.OldestPendingAt = n, fromNullMicros(earliest)
			case "leased":
				st.Leased, st.EarliestLeaseEnd = n, fromNullMicros(earliest)
			case "dead":
				st.Dead = n
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	list := make([]storage.EndpointInboxStats, 0, len(byEndpoint))
	for _, st := range byEndpoint {
		list = append(list, *st)
	}
	slices.SortFunc(list, func(a, b storage.EndpointInboxStats) int { return strings.Compare(a.EndpointID, b.EndpointID) })
	return list, nil
}

// Statements of Sweep. sweepAckedSQL bounds visible_at as well as acked_at, so that it reads
// a range of the (state, visible_at, id) index (see storage.SweepRequest): with acked_at
// alone, which no index holds, it read every acked record kept, row by row, at every sweep and
// under the write lock (0.45 s for 300,000 records, with nothing to delete).
const (
	sweepAckedSQL = `DELETE FROM inbox WHERE id IN (
			SELECT id FROM inbox WHERE state = 'acked' AND visible_at < ?1 AND acked_at < ?1 LIMIT ?2)`
	sweepClaimsSQL = `DELETE FROM claims WHERE (scope, event_id) IN (
			SELECT c.scope, c.event_id FROM claims AS c LEFT JOIN inbox AS i ON i.id = c.inbox_id
			WHERE c.first_received_at < ?1 AND c.first_received_at >= ?2 AND (i.id IS NULL OR i.state = 'acked') LIMIT ?3)`
)

// sweepClaimsFrom is the sweep's lower bound on a claim's first_received_at: ClaimsFrom, or
// none when it is zero.
func sweepClaimsFrom(req storage.SweepRequest) int64 {
	if req.ClaimsFrom.IsZero() {
		return math.MinInt64
	}
	return micros(req.ClaimsFrom)
}

// Sweep deletes one batch of old acked inbox records and one of old claims whose inbox
// record is acked or gone, in one write transaction; each DELETE picks its batch with a LIMIT
// subquery, as on the other backend.
func (s *Store) Sweep(ctx context.Context, req storage.SweepRequest) (storage.SweepResult, error) {
	if req.Batch < 1 {
		return storage.SweepResult{}, s.fail("sweep", fmt.Errorf("%w: Batch %d, want at least 1", storage.ErrInvalid, req.Batch))
	}
	var res storage.SweepResult
	err := s.write(ctx, "sweep", func(tx *sql.Tx) error {
		r, err := tx.ExecContext(ctx, sweepAckedSQL, micros(req.AckedBefore), req.Batch)
		if err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		if res.InboxDeleted, err = r.RowsAffected(); err != nil {
			return err
		}
		r, err = tx.ExecContext(ctx, sweepClaimsSQL, micros(req.ClaimsBefore), sweepClaimsFrom(req), req.Batch)
		if err != nil {
			return fmt.Errorf("claims: %w", err)
		}
		res.ClaimsDeleted, err = r.RowsAffected()
		return err
	})
	if err != nil {
		return storage.SweepResult{}, err
	}
	return res, nil
}

// collectLeased reads every row of leasedColumns and closes rows. Columns after them, the same
// on every row, are read into extra.
func collectLeased(rows *sql.Rows, extra ...any) ([]storage.LeasedDelivery, error) {
	defer rows.Close()
	list := []storage.LeasedDelivery{} // empty, not nil, when nothing matched, as on crdb
	for rows.Next() {
		var (
			d                     storage.LeasedDelivery
			headers               []byte
			receivedAt, visibleAt int64
			leaseToken, lastError sql.NullString
			leasedUntil           sql.NullInt64
		)
		err := rows.Scan(append([]any{&d.InboxID, &d.Scope, &d.EventID, &d.EndpointID, &d.OperationKey, &d.SecretID,
			&d.Method, &d.URL, &headers, &d.Body, &receivedAt, &d.State, &d.Attempts, &leaseToken, &leasedUntil,
			&visibleAt, &lastError}, extra...)...)
		if err != nil {
			return nil, err
		}
		if d.Headers, err = storage.DecodeHeaders(headers); err != nil {
			return nil, fmt.Errorf("inbox record %q: %w", d.InboxID, err)
		}
		d.ReceivedAt = fromMicros(receivedAt)
		d.VisibleAt = fromMicros(visibleAt)
		d.LeasedUntil = fromNullMicros(leasedUntil)
		d.LeaseToken = leaseToken.String
		d.LastError = lastError.String
		list = append(list, d)
	}
	return list, rows.Err()
}

// DeliveryEndpoints returns the endpoint id of each inbox record among the ids.
func (s *Store) DeliveryEndpoints(ctx context.Context, inboxIDs []string) (map[string]string, error) {
	idList, err := json.Marshal(inboxIDs)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(inboxIDs))
	err = s.read("delivery endpoints", func(q queryer) error {
		rows, err := q.QueryContext(ctx, `SELECT id, endpoint_id FROM inbox WHERE id IN (SELECT value FROM json_each(?))`, string(idList))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, endpointID string
			if err := rows.Scan(&id, &endpointID); err != nil {
				return err
			}
			out[id] = endpointID
		}
		return rows.Err()
	})
	return out, err
}
