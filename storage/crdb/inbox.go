package crdb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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

// leasable is the condition for a delivery Lease may hand out, given the bind parameters of
// now and of the attempts limit: a pending delivery that is due, or an expired lease.
func leasable(now, maxAttempts string) string {
	return `((` + duePending(now) + `) OR (` + expiredLease(now) + `)) AND attempts < ` + maxAttempts
}

func duePending(now string) string   { return `state = 'pending' AND visible_at <= ` + now }
func expiredLease(now string) string { return `state = 'leased' AND leased_until <= ` + now }

// inboxTx is how the inbox methods run. On PostgreSQL, READ COMMITTED: every statement
// re-checks its conditions on the latest version of a row it waited for, so conditional
// updates need no serialization retries, and SKIP LOCKED keeps concurrent leases apart.
// CockroachDB runs SERIALIZABLE, where SKIP LOCKED is supported since v22.2. None of them is
// idempotent: after a commit of unknown outcome a second run would see the first one's
// effect as a lost lease, so the caller gets ErrUnavailable instead.
func (s *Store) inboxTx() txOptions {
	if s.engine == EngineCockroachDB {
		return txOptions{isolation: pgx.Serializable}
	}
	return txOptions{isolation: pgx.ReadCommitted}
}

// matchable is a value compared with stored text (an inbox id, a lease token, an endpoint,
// secret or token id, a scope or an event id), as sent to the database. PostgreSQL's text cannot hold NUL, so no stored value
// holds one, and a value that does is sent as "", which no stored one is either (ids, scopes
// and lease tokens are never empty): it matches nothing, as it should. Sent as it is, it
// would fail its statement with a data exception, and with it every call sharing that
// statement's transaction (concurrent acks, leases), each answered INVALID_ARGUMENT for a
// malformed argument of another caller.
func matchable(v string) string {
	if strings.IndexByte(v, 0) >= 0 {
		return ""
	}
	return v
}

// matchableAll is matchable of each value, in a new slice when any changes.
func matchableAll(values []string) []string {
	for i, v := range values {
		if m := matchable(v); m != v {
			out := slices.Clone(values)
			out[i] = m
			for j := i + 1; j < len(out); j++ {
				out[j] = matchable(out[j])
			}
			return out
		}
	}
	return values
}

// params collects bind parameters and names them $1, $2, … in the order they are added.
type params []any

func (p *params) add(v any) string {
	*p = append(*p, v)
	return "$" + strconv.Itoa(len(*p))
}

// filterSQL returns the conditions (each starting with AND) that restrict a query to f.
// A delivery must match every non-empty list.
func filterSQL(f storage.InboxFilter, p *params) string {
	var b strings.Builder
	switch len(f.EndpointIDs) {
	case 0:
	case 1:
		// Equality, not = ANY: an index scan on = ANY returns rows out of order.
		b.WriteString(" AND endpoint_id = " + p.add(matchable(f.EndpointIDs[0])))
	default:
		b.WriteString(" AND endpoint_id = ANY(" + p.add(matchableAll(f.EndpointIDs)) + ")")
	}
	if len(f.Scopes) > 0 {
		b.WriteString(" AND scope = ANY(" + p.add(matchableAll(f.Scopes)) + ")")
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

// noBitmapScans turns PostgreSQL's bitmap scans off for the rest of the transaction. A lease
// finds expired leases along the state = 'leased' range of an inbox index, whose entries
// include every row version a lease wrote and an ack has since replaced, until a vacuum. A bitmap scan visits those versions' heap pages on every lease and never marks their
// entries dead; a plain index scan marks each entry it finds dead, and later leases skip it.
const noBitmapScans = `SELECT set_config('enable_bitmapscan', 'off', true)`

// Lease moves expired leases that used their attempts to dead, then leases up to req.Max
// leasable deliveries, in one transaction.
//
// The candidates are picked and locked in CTEs with FOR UPDATE SKIP LOCKED, so concurrent
// leases skip each other's rows instead of queueing; CTEs because PostgreSQL may run a
// LIMIT subquery inside WHERE more than once and so lease more than req.Max. Up to req.Max
// pending deliveries and req.Max expired leases are locked, the oldest req.Max of them
// leased; the others stay locked until the commit, and concurrent leases skip them. The
// UPDATE checks leasability again, so that a row another transaction leased between the pick
// and the lock (or an engine that ignored SKIP LOCKED) is never leased twice. The CTEs also
// carry each row's state as locked, which tells an expired lease from a pending delivery.
//
// Leases waiting for their turn (SetLeaseConcurrency) share a transaction, as acks do
// (storage.Batcher): each lease's statements run after the ones before it and see what they
// leased, and every caller is answered after the one commit. With 16 workers draining and
// one such transaction at a time, PostgreSQL took in a third more new deliveries and drained
// a fifth more than with two separate leases at a time (BENCHMARKS.md, tenth session).
func (s *Store) Lease(ctx context.Context, req storage.LeaseRequest) (storage.LeaseResult, error) {
	if err := validLease(req); err != nil {
		return storage.LeaseResult{}, fmt.Errorf("crdb: lease: %w", err)
	}
	call := leaseCall{req: req}
	var result storage.LeaseResult
	if lanes := s.leaseLanes; len(lanes) == 0 {
		// No bound: every lease is a transaction of its own, at once.
		results, errs, err := s.commitLeaseBatch(ctx, []leaseCall{call})
		if err == nil {
			err = errs[0]
		}
		if err != nil {
			return storage.LeaseResult{}, err
		}
		result = results[0]
	} else {
		var err error
		if result, err = lanes[leastBusy(lanes)].Submit(ctx, call, s.commitLeases); err != nil {
			if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				// Withdrawn before its turn (a batch's own error says crdb: already).
				err = fmt.Errorf("crdb: lease: %w", err)
			}
			return storage.LeaseResult{}, err
		}
	}
	sortLeased(result.Deliveries)
	return result, nil
}

// leaseCall is one Lease waiting to share a transaction (Store.leaseLanes). Its statements
// are built when the batch runs (leaseStatements), at the time read then.
type leaseCall struct {
	req storage.LeaseRequest
}

// leaseStatements returns the statements of a lease, the dead-lettering of expired leases and
// the lease itself, with their arguments, both at the time read now from req
// (storage.LeaseRequest.Time). Called when the lease's batch runs, not when it was queued: a
// lease waits for its lane behind other batches, and taken at a time read before that wait
// it would end early by as long as it waited.
func leaseStatements(req storage.LeaseRequest) (deadSQL string, deadArgs []any, leaseSQL string, leaseArgs []any) {
	req.Now, req.Clock = req.Time(), nil
	deadSQL, deadArgs = deadLetterExpired(req)
	leaseSQL, leaseArgs = leaseLeasable(req)
	return deadSQL, deadArgs, leaseSQL, leaseArgs
}

// leastBusy returns the index of the lane with the fewest leases waiting, the first of them
// on a tie: a lone lease takes an idle lane at once; under load leases spread over the lanes.
func leastBusy(lanes []storage.Batcher[leaseCall, storage.LeaseResult]) int {
	best, fewest := 0, -1
	for i := range lanes {
		if n := lanes[i].Waiting(); fewest < 0 || n < fewest {
			best, fewest = i, n
		}
	}
	return best
}

// commitLeases commits a batch of leases for storage.Batcher (see commitLeaseBatch).
func (s *Store) commitLeases(batch []leaseCall) ([]storage.LeaseResult, []error, error) {
	// The batch outlives any one caller's context; batchTimeout bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	return s.commitLeaseBatch(ctx, batch)
}

// commitLeaseBatch runs the leases of batch in one transaction, in order, and returns what
// each leased. A failure fails the batch: nothing of it is leased, and every caller may lease
// again. Except when a lease meets a record it cannot read back (storage.ErrUnreadable): that
// lease fails alone, so that one bad record fails only the leases that pick it, not whichever
// leases happened to share its batch. Through an explicit transaction the others then run
// again without it, and nothing of it is leased (storage.WithoutUnreadableLeases). On
// PostgreSQL's one round trip the batch has committed by the time its rows are read: the
// others keep what they leased, and its deliveries come back after their visibility timeout,
// as when a lease's answer is lost, each with an attempt spent, so that a record nobody can
// read ends among the dead letters.
func (s *Store) commitLeaseBatch(ctx context.Context, batch []leaseCall) ([]storage.LeaseResult, []error, error) {
	results := make([]storage.LeaseResult, len(batch))
	errs := make([]error, len(batch))
	collect := func(i int, dead pgconn.CommandTag, rows pgx.Rows) error {
		results[i] = storage.LeaseResult{ExpiredToDead: dead.RowsAffected()}
		var err error
		results[i].Deliveries, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.LeasedDelivery, error) {
			var d storage.LeasedDelivery
			err := scanLeasedInto(row, &d, &d.PreviousLeaseExpired)
			return d, err
		})
		return err
	}
	if s.engine == EnginePostgreSQL {
		// Every statement, after the planner setting that holds for them (noBitmapScans), in
		// one round trip, one implicit transaction: BEGIN and COMMIT of their own made a lease
		// four round trips, and with workers draining the inbox leases took more of the
		// server's time than new events (BENCHMARKS.md).
		err := s.inOneTrip(ctx, "lease", false, func(ctx context.Context, conn *pgx.Conn) error {
			clear(results)
			clear(errs)
			var b pgx.Batch
			b.Queue(noBitmapScans)
			for _, call := range batch {
				deadSQL, deadArgs, leaseSQL, leaseArgs := leaseStatements(call.req)
				b.Queue(deadSQL, deadArgs...)
				b.Queue(leaseSQL, leaseArgs...)
			}
			br := conn.SendBatch(ctx, &b)
			defer br.Close()
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("planner setting: %w", err)
			}
			for i := range batch {
				dead, err := br.Exec()
				if err != nil {
					return fmt.Errorf("dead-letter expired leases: %w", err)
				}
				rows, err := br.Query()
				if err != nil {
					return err
				}
				if err := collect(i, dead, rows); err != nil {
					if !errors.Is(err, storage.ErrUnreadable) {
						return err
					}
					results[i], errs[i] = storage.LeaseResult{}, fmt.Errorf("crdb: lease: %w", err)
				}
			}
			return br.Close()
		})
		if err != nil {
			return nil, nil, err
		}
		return results, errs, nil
	}
	err := storage.WithoutUnreadableLeases(errs, func() (failed int, err error) {
		err = s.inTx(ctx, "lease", s.inboxTx(), func(ctx context.Context, tx pgx.Tx) error {
			clear(results)
			failed = -1
			for i, call := range batch {
				if errs[i] != nil {
					continue
				}
				failed = i
				deadSQL, deadArgs, leaseSQL, leaseArgs := leaseStatements(call.req)
				dead, err := tx.Exec(ctx, deadSQL, deadArgs...)
				if err != nil {
					return fmt.Errorf("dead-letter expired leases: %w", err)
				}
				rows, err := tx.Query(ctx, leaseSQL, leaseArgs...)
				if err != nil {
					return err
				}
				if err := collect(i, dead, rows); err != nil {
					return err
				}
			}
			failed = -1
			return nil
		})
		return failed, err
	})
	if err != nil {
		return nil, nil, err
	}
	return results, errs, nil
}

// leaseExpiredError is the last error of a delivery whose last attempt's lease expired, for a
// lease and for DeadLetterExhausted with ExpiredLeases alike: the cause, then the error the
// delivery held before, if any (the worker's nack of an earlier attempt says what failed).
const leaseExpiredError = `'lease expired' || COALESCE('; last error: ' || NULLIF(last_error, ''), '')`

// deadLetterExpired is the first statement of a lease, and its arguments: every matching
// delivery whose lease expired and which used its attempts moves to dead, unless another
// transaction holds it. Skipping locked rows keeps concurrent lease batches from deadlocking:
// each runs several leases' statements, in whatever order its callers queued, so two of them
// could each lock one endpoint's expired leases and then wait for the other's. A row skipped
// stays an expired lease with no attempts left, which no lease takes (they need attempts <
// MaxAttempts), and the next lease of its endpoint moves it to dead. The worker's last error
// is kept after the cause: it says what failed. It is taken at req.Now (leaseStatements sets it
// from the clock).
func deadLetterExpired(req storage.LeaseRequest) (string, []any) {
	var p params
	now, maxAttempts := p.add(req.Now), p.add(int64(req.MaxAttempts))
	sql := `UPDATE inbox SET state = 'dead', dead_at = ` + now + `, lease_token = NULL,
		leased_until = NULL, last_error = ` + leaseExpiredError + `
		WHERE id IN (SELECT id FROM inbox WHERE state = 'leased' AND leased_until <= ` + now +
		` AND attempts >= ` + maxAttempts + filterSQL(req.InboxFilter, &p) + ` FOR UPDATE SKIP LOCKED)`
	return sql, p
}

// leaseLeasable is the second statement of a lease, and its arguments: it leases up to
// req.Max leasable deliveries, oldest first, and returns them with whether each was taken
// over from an expired lease. It is taken at req.Now (leaseStatements sets it from the clock).
func leaseLeasable(req storage.LeaseRequest) (string, []any) {
	var lp params
	now, maxAttempts := lp.add(req.Now), lp.add(int64(req.MaxAttempts))
	limit := lp.add(int64(req.Max))
	// Taken while the sizes add up to req.MaxBytes, the oldest whatever its size (a prefix:
	// once the running total is over, it stays over). octet_length reads a stored value's
	// size from its TOAST pointer, not the value.
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = math.MaxInt64
	}
	budget := lp.add(maxBytes)
	filters := req.ByEndpoint()
	// Pending deliveries and expired leases are picked (and locked) apart, each in the
	// order of the (state, visible_at, id) index, or of (state, endpoint_id, visible_at,
	// id) one endpoint at a time, and only as many as the lease takes, then merged. One
	// WHERE with (pending OR expired) made PostgreSQL collect and sort every pending
	// delivery first: a lease cost more the larger the backlog.
	candidates := func(due string) string {
		branches := make([]string, len(filters))
		for i, f := range filters {
			branches[i] = `SELECT * FROM (SELECT id, visible_at, state,
				octet_length(body)::BIGINT + octet_length(headers) + octet_length(url) AS size
				FROM inbox WHERE ` + due + ` AND attempts < ` +
				maxAttempts + filterSQL(f, &lp) + ` ORDER BY visible_at, id LIMIT ` + limit +
				` FOR UPDATE SKIP LOCKED) AS b` + strconv.Itoa(i)
		}
		return strings.Join(branches, ` UNION ALL `)
	}
	// (Built before the return: the arguments grow as the text is built.)
	sql := `WITH pending AS (` + candidates(duePending(now)) + `),
		expired AS (` + candidates(expiredLease(now)) + `),
		picked AS (
			SELECT id AS picked_id, state AS picked_state FROM (
				SELECT id, state, visible_at, row_number() OVER (ORDER BY visible_at, id) AS n,
					sum(size) OVER (ORDER BY visible_at, id) AS running
				FROM (SELECT * FROM pending UNION ALL SELECT * FROM expired) AS candidates
			) AS sized
			WHERE n = 1 OR running <= ` + budget + `
			ORDER BY visible_at, id
			LIMIT ` + limit + `
		)
		UPDATE inbox SET state = 'leased', lease_token = ` + lp.add(req.LeaseToken) + `,
			leased_until = ` + lp.add(req.Now.Add(req.Visibility)) + `, attempts = attempts + 1
		FROM picked
		WHERE id = picked_id AND ` + leasable(now, maxAttempts) + `
		RETURNING ` + leasedColumns + `, picked_state = 'leased'`
	return sql, lp
}

// sortLeased orders deliveries by VisibleAt, then by id bytes (not the database's collation).
func sortLeased(list []storage.LeasedDelivery) {
	slices.SortFunc(list, func(a, b storage.LeasedDelivery) int {
		if c := a.VisibleAt.Compare(b.VisibleAt); c != 0 {
			return c
		}
		return strings.Compare(a.InboxID, b.InboxID)
	})
}

// onLiveLease is the condition of Ack, Nack and ExtendLease: the delivery is leased under
// the token and the lease has not expired.
//
// The state is tested with IS TRUE so that no index can serve that test and the planner
// finds the row by its primary key, always one row. Written plainly, the planner trusted
// statistics that said few deliveries are leased and, when a lease had just taken many
// (workers catching up after an outage, before autovacuum analyzed the table), scanned
// every leased entry of the state index to find one row: 22,000 rows and 12 to 50 ms per
// ack, against 0.2 ms (EXPLAIN ANALYZE, BENCHMARKS.md).
const onLiveLease = `id = $1 AND lease_token = $2 AND (state = 'leased') IS TRUE AND leased_until > $3`

// settle runs update, a statement on the delivery's live lease whose parameters start with
// inbox id, lease token and now, and which reports whether it matched a row. When it did not,
// settle says why (storage.MissedLease).
func (s *Store) settle(ctx context.Context, op, inboxID string, update func(ctx context.Context, tx pgx.Tx) (bool, error)) error {
	return s.inTx(ctx, op, s.inboxTx(), func(ctx context.Context, tx pgx.Tx) error {
		matched, err := update(ctx, tx)
		if err != nil || matched {
			return err
		}
		var state string
		err = tx.QueryRow(ctx, `SELECT state FROM inbox WHERE id = $1`, matchable(inboxID)).Scan(&state)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		return storage.MissedLease(inboxID, state)
	})
}

// ackCall is one Ack waiting to share a commit (Store.acks).
type ackCall struct {
	inboxID, leaseToken string
	now                 time.Time
}

// Ack marks a delivery leased under leaseToken done.
//
// Concurrent acks share one transaction (storage.Batcher), as claims do: an ack is a
// worker's most frequent write, and with one transaction each (three round trips and a
// commit) eight concurrent acks took 273 µs apiece; sharing took that to 193 µs, and a batch
// in one round trip on PostgreSQL (commitAcks) to about 120 µs (BenchmarkAcks, fsync on,
// BENCHMARKS.md). Each ack still gets its own answer, and none before its batch commits.
func (s *Store) Ack(ctx context.Context, inboxID, leaseToken string, now time.Time) error {
	if s.closed.Load() {
		return fmt.Errorf("crdb: ack: %w", storage.ErrClosed)
	}
	_, err := s.acks.Submit(ctx, ackCall{inboxID, leaseToken, now}, s.commitAcks)
	return ackError(err)
}

// AckMany acks each delivery as Ack would, the acks queued together for one commit.
func (s *Store) AckMany(ctx context.Context, acks []storage.LeaseRef, now time.Time) []error {
	if s.closed.Load() {
		errs := make([]error, len(acks))
		for i := range errs {
			errs[i] = fmt.Errorf("crdb: ack: %w", storage.ErrClosed)
		}
		return errs
	}
	calls := make([]ackCall, len(acks))
	for i, a := range acks {
		calls[i] = ackCall{a.InboxID, a.LeaseToken, now}
	}
	_, errs := s.acks.SubmitAll(ctx, calls, s.commitAcks)
	for i, err := range errs {
		errs[i] = ackError(err)
	}
	return errs
}

// ackError is an ack's error as callers see it: a sentinel as the batch gave it, anything
// else (the batch's failure, a withdrawn caller) unavailable.
func ackError(err error) error {
	if err != nil && !isSentinel(err) {
		return fmt.Errorf("crdb: ack: %w: %w", storage.ErrUnavailable, err)
	}
	return err
}

// ackBatchSQL acks every delivery of a batch whose lease is live, each at its own now, and
// returns the ones it acked. The (id, lease token) pairs of one batch are distinct, so a
// delivery is acked at most once (only its live token can match). IS TRUE keeps the planner
// on the primary key, as in onLiveLease. It is planned for every batch (QueryExecModeExec),
// like readClaims: a plan cached while the inbox was small scanned the whole table, and went
// on doing so as it grew (BenchmarkAcks took 760 µs an ack instead of 90).
const ackBatchSQL = `UPDATE inbox SET state = 'acked', acked_at = a.ack_time, lease_token = NULL, leased_until = NULL
FROM unnest($1::TEXT[], $2::TEXT[], $3::TIMESTAMPTZ[]) AS a (id, lease_token, ack_time)
WHERE inbox.id = a.id AND inbox.lease_token = a.lease_token AND (inbox.state = 'leased') IS TRUE
	AND inbox.leased_until > a.ack_time
RETURNING inbox.id, a.lease_token`

// commitAcks acks a batch in one transaction. An ack of a missing delivery or of a lost
// lease fails alone; any other failure fails the batch, which then committed nothing (or, if
// its commit's outcome is unknown, is reported unavailable, as a lone ack's would be). An ack
// repeated within the batch is answered as if it ran after the first: already acked if the
// first acked, else the first one's error.
func (s *Store) commitAcks(batch []ackCall) ([]struct{}, []error, error) {
	d := distinctAcks(batch)
	var o ackOutcome
	// The batch outlives any one caller's context; batchTimeout bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var err error
	if s.engine == EnginePostgreSQL {
		err = s.inOneTrip(ctx, "ack", false, func(ctx context.Context, conn *pgx.Conn) error {
			o = ackOutcome{acked: map[ackPair]bool{}, states: map[string]string{}}
			return ackInOnePipeline(ctx, conn, d, o)
		})
	} else {
		err = s.inTx(ctx, "ack", s.inboxTx(), func(ctx context.Context, tx pgx.Tx) error {
			o = ackOutcome{acked: map[ackPair]bool{}, states: map[string]string{}}
			return ackInOneStatement(ctx, tx, d, o)
		})
	}
	if err != nil {
		return nil, nil, err
	}
	if s.engine == EnginePostgreSQL {
		s.recheckMissedAcks(ctx, d, o)
	}
	errs := make([]error, len(batch))
	d.answer(batch, o, errs)
	return make([]struct{}, len(batch)), errs, nil
}

// recheckMissedAcks reads again, once the batch has committed, the state of each delivery an
// ack of it missed while it was not acked yet (PostgreSQL's path). ackOneSQL reads the state
// from its statement's snapshot, taken before the UPDATE waited for the row: behind another
// ack of the delivery still committing (the retry of an ack whose answer was lost, made while
// the first one's slow commit went on), the UPDATE found the delivery acked once it got the
// row, and the snapshot still leased, so the retry heard "lease lost", not that the work was
// done (ErrAlreadyAcked). A statement of its own reads what has committed. Only a batch with
// such a miss pays the round trip; if the read fails, the snapshot's states stand.
func (s *Store) recheckMissedAcks(ctx context.Context, d ackArgs, o ackOutcome) {
	var missed []string
	for i, id := range d.ids {
		if state := o.states[id]; !o.acked[ackPair{id, d.tokens[i]}] && state != "" && state != storage.StateAcked {
			missed = append(missed, id)
		}
	}
	if len(missed) == 0 {
		return
	}
	states := map[string]string{}
	err := s.single(ctx, "ack", func(ctx context.Context, conn *pgx.Conn) error {
		clear(states)
		return readStates(ctx, conn, missed, states)
	})
	if err == nil {
		maps.Copy(o.states, states)
	}
}

// readStates sets states[id] to the state of each delivery of ids that exists.
func readStates(ctx context.Context, q querier, ids []string, states map[string]string) error {
	rows, err := q.Query(ctx, `SELECT id, state FROM inbox WHERE id = ANY($1::TEXT[])`, matchableAll(ids))
	if err != nil {
		return err
	}
	var id, state string
	_, err = pgx.ForEachRow(rows, []any{&id, &state}, func() error {
		states[id] = state
		return nil
	})
	return err
}

// ackPair is what one ack names.
type ackPair struct{ inboxID, leaseToken string }

// ackArgs are the distinct acks of a batch, as the arrays of ackBatchSQL, and the first ack
// in the batch of each pair.
type ackArgs struct {
	ids, tokens []string
	nows        []time.Time
	first       map[ackPair]int
}

// ackOutcome is what a batch's transaction found: the pairs it acked, and the state of the
// deliveries it missed.
type ackOutcome struct {
	acked map[ackPair]bool
	// states holds the state of each delivery an ack missed, when it exists.
	states map[string]string
}

func distinctAcks(batch []ackCall) ackArgs {
	d := ackArgs{first: make(map[ackPair]int, len(batch))}
	for i, a := range batch {
		k := ackPair{a.inboxID, a.leaseToken}
		if _, seen := d.first[k]; seen {
			continue
		}
		d.first[k] = i
		d.ids = append(d.ids, a.inboxID)
		d.tokens = append(d.tokens, a.leaseToken)
		d.nows = append(d.nows, a.now)
	}
	return d
}

// answer sets errs[i] for each ack of the batch that did not go through. A repeated ack is
// answered as if it ran after the first: already acked if the first acked, else the first
// one's error.
func (d ackArgs) answer(batch []ackCall, o ackOutcome, errs []error) {
	for i, a := range batch {
		k := ackPair{a.inboxID, a.leaseToken}
		switch j := d.first[k]; {
		case j != i && o.acked[k]:
			// The first ack of the pair ended the lease.
			errs[i] = mapError("ack", storage.MissedLease(a.inboxID, storage.StateAcked))
		case j != i:
			errs[i] = errs[j]
		case !o.acked[k]:
			errs[i] = mapError("ack", storage.MissedLease(a.inboxID, o.states[a.inboxID]))
		}
	}
}

// ackInOneStatement runs ackBatchSQL in tx, then reads the state of the deliveries it did not
// ack. CockroachDB's path.
func ackInOneStatement(ctx context.Context, tx pgx.Tx, d ackArgs, o ackOutcome) error {
	rows, err := tx.Query(ctx, ackBatchSQL, pgx.QueryExecModeExec, matchableAll(d.ids), matchableAll(d.tokens), d.nows)
	if err != nil {
		return err
	}
	var k ackPair
	if _, err := pgx.ForEachRow(rows, []any{&k.inboxID, &k.leaseToken}, func() error {
		o.acked[k] = true
		return nil
	}); err != nil {
		return err
	}
	var missed []string
	for i := range d.ids {
		if !o.acked[ackPair{d.ids[i], d.tokens[i]}] {
			missed = append(missed, d.ids[i])
		}
	}
	if len(missed) == 0 {
		return nil
	}
	return readStates(ctx, tx, missed, o.states)
}

// ackOneSQL acks one delivery whose lease is live and says whether it did, and the delivery's
// state as it was before the UPDATE (NULL when it does not exist; read when the ack missed, to
// tell an acked delivery from a lease lost otherwise, and read again by recheckMissedAcks when
// it is not acked, as of the statement's snapshot).
const ackOneSQL = `WITH acked AS (
	UPDATE inbox SET state = 'acked', acked_at = $3, lease_token = NULL, leased_until = NULL
	WHERE ` + onLiveLease + `
	RETURNING id
)
SELECT EXISTS (SELECT 1 FROM acked), (SELECT state FROM inbox WHERE id = $1)`

// ackInOnePipeline is PostgreSQL's path: one ackOneSQL per ack, all sent at once and run as
// one implicit transaction (inOneTrip), so a batch costs one round trip; BEGIN and COMMIT
// of their own made it three or four. One statement per ack, rather than ackBatchSQL's one
// per batch, because a plan of ackBatchSQL cached while the inbox was small scanned the
// whole table as it grew (760 µs an ack in BenchmarkAcks), and planning it anew for every
// batch cost more than the one-row statements, whose cached plan is a primary key lookup.
func ackInOnePipeline(ctx context.Context, conn *pgx.Conn, d ackArgs, o ackOutcome) error {
	var b pgx.Batch
	for i := range d.ids {
		b.Queue(ackOneSQL, matchable(d.ids[i]), matchable(d.tokens[i]), d.nows[i])
	}
	br := conn.SendBatch(ctx, &b)
	defer br.Close()
	for i := range d.ids {
		var ok bool
		var state *string
		if err := br.QueryRow().Scan(&ok, &state); err != nil {
			return err
		}
		o.acked[ackPair{d.ids[i], d.tokens[i]}] = ok
		if state != nil && !ok {
			o.states[d.ids[i]] = *state
		}
	}
	return br.Close()
}

// Nack ends a lease early: the delivery is leasable again at retryAt, or dead once it used
// maxAttempts attempts.
func (s *Store) Nack(ctx context.Context, inboxID, leaseToken string, retryAt time.Time, maxAttempts int, lastError string, now time.Time) (bool, error) {
	if maxAttempts < 1 {
		return false, fmt.Errorf("crdb: nack: %w: maxAttempts %d, want at least 1", storage.ErrInvalid, maxAttempts)
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
	giveBack := int64(0)
	if maxAttempts == 0 {
		giveBack, maxAttempts = 1, math.MaxInt
	}
	var dead bool
	err := s.settle(ctx, op, inboxID, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		dead = false
		var state string
		err := tx.QueryRow(ctx, `UPDATE inbox SET
			state = CASE WHEN attempts >= $4::BIGINT THEN 'dead' ELSE 'pending' END,
			visible_at = CASE WHEN attempts >= $4::BIGINT THEN visible_at ELSE $5::TIMESTAMPTZ END,
			dead_at = CASE WHEN attempts >= $4::BIGINT THEN $3::TIMESTAMPTZ END,
			attempts = GREATEST(attempts - $7::BIGINT, 0),
			last_error = $6, lease_token = NULL, leased_until = NULL
			WHERE `+onLiveLease+` RETURNING state`,
			matchable(inboxID), matchable(leaseToken), now, int64(maxAttempts), retryAt, storage.StorableText(lastError), giveBack).Scan(&state)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		dead = state == storage.StateDead
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
	var until time.Time
	err := s.settle(ctx, "extend lease", req.InboxID, func(ctx context.Context, tx pgx.Tx) (bool, error) {
		// The time is read here, in each run of the transaction: not when the call came,
		// before it waited for a connection, a retry's backoff or, on CockroachDB, the
		// retries of ExecuteTx (storage.ExtendRequest.Clock).
		now := req.Time()
		err := tx.QueryRow(ctx, `UPDATE inbox SET leased_until = $4 WHERE `+onLiveLease+` RETURNING leased_until`,
			matchable(req.InboxID), matchable(req.LeaseToken), now, now.Add(req.Visibility)).Scan(&until)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		return time.Time{}, err
	}
	return until.UTC(), nil
}

// listDeadLetters is ListDeadLetters' statement, and its arguments. The ids are picked, with
// their sizes (octet_length reads them from TOAST pointers), before any body is read. One more
// than the page is picked, so that the page can tell whether another follows without reading
// it, and a page cut by maxBytes knows it was cut: the last column, the same on every row, is
// true when fewer rows were kept than picked.
//
// Ids are ordered, and compared with the key's, by their bytes, as sortLeased orders the page
// and as the key's id was taken from it: on PostgreSQL with COLLATE "C", since ORDER BY and >
// follow the database's collation, which may order "B" after "a" and ignore punctuation; in
// such an order a key from the page's last by bytes would skip or repeat deliveries.
// CockroachDB's STRING compares bytes already.
func listDeadLetters(engine Engine, filter storage.InboxFilter, after storage.DeadLetterKey, limit int, maxBytes int64) (string, []any) {
	var p params
	where := filterSQL(filter, &p)
	if maxBytes <= 0 {
		maxBytes = math.MaxInt64
	}
	id := engine.bytesOrder(`id`)
	if !after.IsZero() {
		// The first condition alone bounds the index scan; the second drops the key's
		// VisibleAt's ids up to the key's.
		at := p.add(after.VisibleAt)
		where += ` AND visible_at >= ` + at + ` AND (visible_at > ` + at + ` OR ` + id + ` > ` + p.add(matchable(after.InboxID)) + `)`
	}
	order := `visible_at, ` + id
	sql := `WITH sized AS (
			SELECT id, row_number() OVER (ORDER BY ` + order + `) AS n,
				sum(size) OVER (ORDER BY ` + order + `) AS running
			FROM (SELECT id, visible_at,
					octet_length(body)::BIGINT + octet_length(headers) + octet_length(url) AS size
				FROM inbox WHERE state = 'dead'` + where + `
				ORDER BY ` + order + ` LIMIT ` + p.add(int64(limit)+1) + `) AS dead
		), picked AS (
			SELECT id AS picked_id FROM sized WHERE n <= ` + p.add(int64(limit)) + ` AND (n = 1 OR running <= ` + p.add(maxBytes) + `)
		)
		SELECT ` + leasedColumns + `, (SELECT count(*) FROM sized) > (SELECT count(*) FROM picked)
		FROM inbox JOIN picked ON id = picked_id`
	return sql, p
}

// ListDeadLetters returns a page of the dead deliveries matching the filter, after the key
// after, oldest VisibleAt (when they last became due) first, then by id bytes, up
// to limit and within maxBytes, and whether more follow.
func (s *Store) ListDeadLetters(ctx context.Context, filter storage.InboxFilter, after storage.DeadLetterKey, limit int, maxBytes int64) ([]storage.LeasedDelivery, bool, error) {
	if limit < 1 {
		return nil, false, fmt.Errorf("crdb: list dead letters: %w: limit %d, want at least 1", storage.ErrInvalid, limit)
	}
	var (
		list []storage.LeasedDelivery
		more bool
	)
	err := s.single(ctx, "list dead letters", func(ctx context.Context, conn *pgx.Conn) error {
		sql, args := listDeadLetters(s.engine, filter, after, limit, maxBytes)
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		more = false // an attempt run again after a broken connection starts over
		list, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.LeasedDelivery, error) {
			var d storage.LeasedDelivery
			err := scanLeasedInto(row, &d, &more)
			return d, err
		})
		return err
	})
	if err != nil {
		return nil, false, err
	}
	sortLeased(list)
	return list, more, nil
}

// requeueSQL moves a dead delivery back to pending. IS TRUE keeps the planner on the
// primary key, as in onLiveLease.
const requeueSQL = `UPDATE inbox SET state = 'pending', attempts = 0, visible_at = $2,
	dead_at = NULL, lease_token = NULL, leased_until = NULL WHERE id = $1 AND (state = 'dead') IS TRUE`

// Requeue moves a dead delivery back to pending, visible at now, with no attempts used.
//
// Its statement is run as the other inbox writes are (one trip on PostgreSQL, a transaction
// on CockroachDB), not through single, which runs a statement again when the connection broke
// after it was sent: that second run found the delivery the first had requeued no longer dead
// and answered ErrNotFound, so the operator was told there was no such dead letter while it
// was back in the queue. An outcome that cannot be known is ErrUnavailable.
func (s *Store) Requeue(ctx context.Context, inboxID string, now time.Time) error {
	return s.updateDead(ctx, "requeue", inboxID, requeueSQL, matchable(inboxID), now)
}

// updateDead runs query, an update of the dead delivery inboxID, as the other inbox writes
// are (see Requeue): ErrNotFound when it matched no row.
//
// The audit event ctx carries is inserted by the same statement, from the row it changed, so
// that the change and its record commit together and a change of nothing records nothing.
func (s *Store) updateDead(ctx context.Context, op, inboxID, query string, args ...any) error {
	if ev, ok := storage.AuditEventFrom(ctx); ok {
		if ev.ID == "" || ev.Action == "" {
			return fmt.Errorf("crdb: %s: %w: audit event without id or action", op, storage.ErrInvalid)
		}
		n := len(args)
		query = fmt.Sprintf(`WITH changed AS (%s RETURNING endpoint_id)
			INSERT INTO audit_events (`+auditColumns+`)
			SELECT $%d::TEXT, $%d::TIMESTAMPTZ, $%d::TEXT, $%d::TEXT, endpoint_id, $%d::TEXT, $%d::TEXT FROM changed`, query, n+1, n+2, n+3, n+4, n+5, n+6)
		args = append(args[:n:n], ev.ID, ev.At, ev.Actor, ev.Action, ev.SecretID, ev.Detail)
	}
	update := func(ctx context.Context, db interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}) error {
		tag, err := db.Exec(ctx, query, args...)
		if err == nil && tag.RowsAffected() == 0 {
			return fmt.Errorf("dead inbox record %q: %w", inboxID, storage.ErrNotFound)
		}
		return err
	}
	if s.engine == EnginePostgreSQL {
		return s.inOneTrip(ctx, op, false, func(ctx context.Context, conn *pgx.Conn) error { return update(ctx, conn) })
	}
	return s.inTx(ctx, op, s.inboxTx(), func(ctx context.Context, tx pgx.Tx) error { return update(ctx, tx) })
}

// discardSQL settles a dead delivery unrun, as an ack leaves a delivery ($3 is the reason).
const discardSQL = `UPDATE inbox SET state = 'acked', acked_at = $2,
	last_error = $3::TEXT || COALESCE('; last error: ' || NULLIF(last_error, ''), '')
	WHERE id = $1 AND (state = 'dead') IS TRUE`

// Discard settles a dead delivery unrun: acked at now, its reason before its last error. Its
// statement is run as Requeue's is, for the same reason: run a second time after a broken
// connection, it would find the delivery no longer dead and answer ErrNotFound.
func (s *Store) Discard(ctx context.Context, inboxID, reason string, now time.Time) error {
	return s.updateDead(ctx, "discard", inboxID, discardSQL, matchable(inboxID), now, storage.StorableText(reason))
}

// deadLetterExhaustedSQL moves up to $4 pending deliveries that used $3 attempts or more to
// dead. They are picked in a CTE, because PostgreSQL may run a LIMIT subquery inside WHERE
// more than once and so move more than $4 (see Lease). Rows another transaction holds are
// skipped, as in deadLetterExpired: a lease of a server whose limit is higher may be taking
// them, and waiting for it could deadlock.
const deadLetterExhaustedSQL = `WITH picked AS (
		SELECT id AS picked_id FROM inbox WHERE state = 'pending' AND attempts >= $3 LIMIT $4 FOR UPDATE SKIP LOCKED
	)
	UPDATE inbox SET state = 'dead', dead_at = $1,
		last_error = $2::TEXT || COALESCE('; last error: ' || NULLIF(last_error, ''), '')
	FROM picked
	WHERE id = picked_id AND state = 'pending' AND attempts >= $3`

// deadLetterExpiredBatchSQL moves up to $3 leased deliveries whose lease ended by $1 and which
// used $2 attempts or more to dead, as deadLetterExpired does for a lease, whatever their
// endpoint (storage.ExhaustedRequest.ExpiredLeases). Picked in a CTE, with rows another
// transaction holds skipped, as in deadLetterExhaustedSQL: a lease or an extension may be
// ending them. The UPDATE checks the state and the lease's end again.
const deadLetterExpiredBatchSQL = `WITH picked AS (
		SELECT id AS picked_id FROM inbox WHERE state = 'leased' AND leased_until <= $1 AND attempts >= $2
		LIMIT $3 FOR UPDATE SKIP LOCKED
	)
	UPDATE inbox SET state = 'dead', dead_at = $1, lease_token = NULL, leased_until = NULL,
		last_error = ` + leaseExpiredError + `
	FROM picked
	WHERE id = picked_id AND state = 'leased' AND leased_until <= $1 AND attempts >= $2`

// DeadLetterExhausted moves up to req.Batch pending deliveries with no attempts left under
// req.MaxAttempts to dead, in one statement; with req.ExpiredLeases, up to req.Batch expired
// leases with no attempts left (deadLetterExpiredBatchSQL).
//
// The statement is run as Requeue's is, not through single, which runs it again when the
// connection broke after it was sent: that second run moved another batch and reported only
// that one, so the count, and the dead-lettered metric the server keeps from it, missed the
// first. An outcome that cannot be known is ErrUnavailable.
func (s *Store) DeadLetterExhausted(ctx context.Context, req storage.ExhaustedRequest) (int64, error) {
	switch {
	case req.MaxAttempts < 1:
		return 0, fmt.Errorf("crdb: dead-letter exhausted: %w: MaxAttempts %d, want at least 1", storage.ErrInvalid, req.MaxAttempts)
	case req.Batch < 1:
		return 0, fmt.Errorf("crdb: dead-letter exhausted: %w: Batch %d, want at least 1", storage.ErrInvalid, req.Batch)
	}
	var moved int64
	move := func(ctx context.Context, db interface {
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}) error {
		var tag pgconn.CommandTag
		var err error
		if req.ExpiredLeases {
			tag, err = db.Exec(ctx, deadLetterExpiredBatchSQL, req.Now, int64(req.MaxAttempts), int64(req.Batch))
		} else {
			tag, err = db.Exec(ctx, deadLetterExhaustedSQL, req.Now, req.Reason, int64(req.MaxAttempts), int64(req.Batch))
		}
		moved = tag.RowsAffected()
		return err
	}
	var err error
	if s.engine == EnginePostgreSQL {
		err = s.inOneTrip(ctx, "dead-letter exhausted", false, func(ctx context.Context, conn *pgx.Conn) error { return move(ctx, conn) })
	} else {
		err = s.inTx(ctx, "dead-letter exhausted", s.inboxTx(), func(ctx context.Context, tx pgx.Tx) error { return move(ctx, tx) })
	}
	if err != nil {
		return 0, err
	}
	return moved, nil
}

// InboxStats counts the deliveries of every endpoint that has any not yet acked.
//
// The counts and the oldest pending visible_at come from the (state, endpoint_id, visible_at,
// id) index alone; the earliest leased_until is read apart, from the leased rows only (as
// many as the workers hold, plus leases that ran out with no worker left to take them over),
// so that no row of the pending backlog is read. One statement: one consistent snapshot.
func (s *Store) InboxStats(ctx context.Context) ([]storage.EndpointInboxStats, error) {
	var list []storage.EndpointInboxStats
	err := s.single(ctx, "inbox stats", func(ctx context.Context, conn *pgx.Conn) error {
		// The server's health follows this read: a database that reads but cannot write
		// must not pass it, on either engine.
		if err := refuseReadOnly(ctx, conn); err != nil {
			return err
		}
		rows, err := conn.Query(ctx, `SELECT c.endpoint_id, c.pending, c.leased, c.dead, c.oldest, l.lease_end
			FROM (SELECT endpoint_id,
				count(CASE WHEN state = 'pending' THEN 1 END) AS pending,
				count(CASE WHEN state = 'leased' THEN 1 END) AS leased,
				count(CASE WHEN state = 'dead' THEN 1 END) AS dead,
				min(CASE WHEN state = 'pending' THEN visible_at END) AS oldest
				FROM inbox WHERE state IN ('pending', 'leased', 'dead') GROUP BY endpoint_id) AS c
			LEFT JOIN (SELECT endpoint_id, min(leased_until) AS lease_end
				FROM inbox WHERE state = 'leased' GROUP BY endpoint_id) AS l
			ON l.endpoint_id = c.endpoint_id`)
		if err != nil {
			return err
		}
		list, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.EndpointInboxStats, error) {
			var (
				st               storage.EndpointInboxStats
				oldest, leaseEnd *time.Time
			)
			err := row.Scan(&st.EndpointID, &st.Pending, &st.Leased, &st.Dead, &oldest, &leaseEnd)
			if oldest != nil {
				st.OldestPendingAt = oldest.UTC()
			}
			if leaseEnd != nil {
				st.EarliestLeaseEnd = leaseEnd.UTC()
			}
			return st, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	// By bytes, like ListEndpoints, not by the database's collation.
	slices.SortFunc(list, func(a, b storage.EndpointInboxStats) int { return strings.Compare(a.EndpointID, b.EndpointID) })
	return list, nil
}

// Statements of Sweep. sweepAckedSQL bounds visible_at as well as acked_at, so that it reads
// a range of the (state, visible_at, id) index (see storage.SweepRequest): with acked_at
// alone, which no index holds, it read every acked record kept (days of them, under
// --inbox-retention) at every sweep to find the few due.
const (
	sweepAckedSQL = `DELETE FROM inbox WHERE id IN (
			SELECT id FROM inbox WHERE state = 'acked' AND visible_at < $1 AND acked_at < $1 LIMIT $2)`
	sweepClaimsSQL = `DELETE FROM claims WHERE (scope, event_id) IN (
			SELECT c.scope, c.event_id FROM claims AS c LEFT JOIN inbox AS i ON i.id = c.inbox_id
			WHERE c.first_received_at < $1 AND c.first_received_at >= $3 AND (i.id IS NULL OR i.state = 'acked') LIMIT $2)`
)

// Sweep deletes one batch of old acked inbox records and one of old claims whose inbox
// record is acked or gone, in one transaction. Each DELETE picks its batch with a LIMIT
// subquery; the rows it picks cannot change state under it (acked rows are only deleted, a
// missing row never comes back), so it needs no re-check.
func (s *Store) Sweep(ctx context.Context, req storage.SweepRequest) (storage.SweepResult, error) {
	if req.Batch < 1 {
		return storage.SweepResult{}, fmt.Errorf("crdb: sweep: %w: Batch %d, want at least 1", storage.ErrInvalid, req.Batch)
	}
	var res storage.SweepResult
	err := s.inTx(ctx, "sweep", s.inboxTx(), func(ctx context.Context, tx pgx.Tx) error {
		res = storage.SweepResult{}
		tag, err := tx.Exec(ctx, sweepAckedSQL, req.AckedBefore, int64(req.Batch))
		if err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		res.InboxDeleted = tag.RowsAffected()
		// The zero time (year 1) is before any claim: with no ClaimsFrom, no bound.
		tag, err = tx.Exec(ctx, sweepClaimsSQL, req.ClaimsBefore, int64(req.Batch), req.ClaimsFrom)
		if err != nil {
			return fmt.Errorf("claims: %w", err)
		}
		res.ClaimsDeleted = tag.RowsAffected()
		return nil
	})
	if err != nil {
		return storage.SweepResult{}, err
	}
	return res, nil
}

// scanLeased reads one row of leasedColumns.
func scanLeased(row pgx.CollectableRow) (storage.LeasedDelivery, error) {
	var d storage.LeasedDelivery
	err := scanLeasedInto(row, &d)
	return d, err
}

// scanLeasedInto reads leasedColumns into d, and any columns after them into extra.
func scanLeasedInto(row pgx.CollectableRow, d *storage.LeasedDelivery, extra ...any) error {
	var (
		headers               []byte
		attempts              int64
		leaseToken, lastError *string
		leasedUntil           *time.Time
	)
	err := row.Scan(append([]any{&d.InboxID, &d.Scope, &d.EventID, &d.EndpointID, &d.OperationKey, &d.SecretID,
		&d.Method, &d.URL, &headers, &d.Body, &d.ReceivedAt, &d.State, &attempts, &leaseToken, &leasedUntil,
		&d.VisibleAt, &lastError}, extra...)...)
	if err != nil {
		return err
	}
	if d.Headers, err = storage.DecodeHeaders(headers); err != nil {
		return fmt.Errorf("inbox record %q: %w", d.InboxID, err)
	}
	d.ReceivedAt = d.ReceivedAt.UTC()
	d.VisibleAt = d.VisibleAt.UTC()
	d.Attempts = int(attempts)
	if leaseToken != nil {
		d.LeaseToken = *leaseToken
	}
	if leasedUntil != nil {
		d.LeasedUntil = leasedUntil.UTC()
	}
	if lastError != nil {
		d.LastError = *lastError
	}
	return nil
}

// DeliveryEndpoints returns the endpoint id of each inbox record among the ids.
func (s *Store) DeliveryEndpoints(ctx context.Context, inboxIDs []string) (map[string]string, error) {
	type row struct{ ID, EndpointID string }
	rows, err := queryAll(ctx, s, "delivery endpoints", pgx.RowToStructByPos[row],
		`SELECT id, endpoint_id FROM inbox WHERE id = ANY($1::TEXT[])`, matchableAll(inboxIDs))
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[r.ID] = r.EndpointID
	}
	return out, nil
}
