package crdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/storage"
)

// claimSQL claims the identity and stores the inbox record in one statement: the inbox row is
// inserted only if the claim row was, so the two can never disagree, and a duplicate writes
// nothing. The delivery starts pending, visible at once. $1 and $2 appear twice, hence the
// casts that pin their types on both engines.
const claimSQL = `WITH c AS (
	INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
	VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (scope, event_id) DO NOTHING
	RETURNING inbox_id, operation_key, first_received_at
)
INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url, headers,
	body, received_at, state, attempts, visible_at)
SELECT c.inbox_id, $1::TEXT, $2::TEXT, $6::TEXT, c.operation_key, $7::TEXT, $8::TEXT, $9::TEXT,
	$10::BYTEA, $11::BYTEA, c.first_received_at, 'pending', 0, c.first_received_at
FROM c
RETURNING id, operation_key, received_at`

const existingClaimSQL = `SELECT inbox_id, operation_key, first_received_at FROM claims
WHERE scope = $1 AND event_id = $2`

// claimBatchSQL claims every identity of a batch and stores the inbox records of those it
// claimed, in one statement and so one round trip: the inbox rows are inserted only for the
// claims the statement inserted, so the two tables never disagree, and an identity claimed
// before writes nothing. The identities of one batch are distinct (commitClaims sees to it),
// and sorted, so that two batches racing on the same identities lock them in the same order.
// unnest over several arrays and ON CONFLICT DO NOTHING RETURNING in a CTE run on both
// engines.
const claimBatchSQL = `WITH input AS (
	SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::TEXT[], $5::TIMESTAMPTZ[],
		$6::TEXT[], $7::TEXT[], $8::TEXT[], $9::TEXT[], $10::BYTEA[], $11::BYTEA[])
		AS t (scope, event_id, inbox_id, operation_key, received_at, endpoint_id, secret_id, method,
			url, headers, body)
), c AS (
	INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
	SELECT scope, event_id, inbox_id, operation_key, received_at FROM input
	ON CONFLICT (scope, event_id) DO NOTHING
	RETURNING scope, event_id
)
INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url, headers,
	body, received_at, state, attempts, visible_at)
SELECT i.inbox_id, i.scope, i.event_id, i.endpoint_id, i.operation_key, i.secret_id, i.method, i.url,
	i.headers, i.body, i.received_at, 'pending', 0, i.received_at
FROM input AS i JOIN c ON c.scope = i.scope AND c.event_id = i.event_id
RETURNING scope, event_id`

// existingClaimsSQL reads the claims of several identities at once.
const existingClaimsSQL = `SELECT c.scope, c.event_id, c.inbox_id, c.operation_key, c.first_received_at
FROM unnest($1::TEXT[], $2::TEXT[]) AS k (scope, event_id)
JOIN claims AS c ON c.scope = k.scope AND c.event_id = k.event_id`

// Claim atomically claims (d.Scope, d.EventID) and stores d as its inbox record.
//
// Concurrent claims share statements and transactions (storage.ClaimBatcher): a batch claims
// its identities with one multi-row statement, so it costs one commit however many claims it
// holds. On PostgreSQL that statement runs on its own, its own transaction, so that a batch
// of new events costs one round trip; after a batch that met a redelivery, the next batch
// first reads which of its identities are claimed already, so that a run of redeliveries
// writes nothing and sends no bodies. CockroachDB always reads first, then claims the rest in
// a transaction. A batch whose commit outcome is unknown (the connection broke before the
// answer, or CockroachDB answered 40003) runs again with the same inbox ids; a claim then
// found held by its own inbox id went through the first time and is reported accepted.
func (s *Store) Claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	if err := validDelivery(d); err != nil {
		return storage.ClaimResult{}, fmt.Errorf("crdb: claim: %w", err)
	}
	if s.closed.Load() {
		return storage.ClaimResult{}, fmt.Errorf("crdb: claim: %w", storage.ErrClosed)
	}
	res, err := s.lane(d.Scope, d.EventID).Submit(ctx, d, s.commitClaims)
	if err != nil && !isSentinel(err) {
		err = fmt.Errorf("crdb: claim: %w: %w", storage.ErrUnavailable, err)
	}
	return res, err
}

// identity is the key of a claim.
type identity struct{ scope, eventID string }

// batchTimeout bounds one batch of claims, leases or acks, its retries included. A batch runs
// for all its callers, whose own contexts cannot stop it, and its lane's next batch waits for
// it, so without a bound one statement that does not end (waiting for the lock of an identity
// or a row that a hung instance's or an operator's open transaction holds, for as long as that
// transaction lasts; or on a connection the network silently dropped, for minutes, until TCP
// keepalive gives up) stalled every new event, or every lease or ack, of the instance while
// its health said SERVING. When the bound ends a batch, its callers get ErrUnavailable, as for
// any commit of unknown outcome: the provider (or worker) retries, and a claim's retry is
// accepted or finds the claim held. It is as long as callers wait by default (the edge 8 s,
// the CLI 30 s), so it only ends batches that nobody is waiting for any more.
var batchTimeout = 30 * time.Second

// commitClaims claims a batch. An identity that appears more than once in the batch is
// claimed by its first delivery; the later ones get the first one's outcome as duplicates,
// unless the first failed on its own (see claimAgain).
// If the multi-row statement fails on a unique violation (only an inbox id reused can cause
// one), the batch runs again one claim per savepoint, so that only the offending claim fails.
func (s *Store) commitClaims(batch []storage.Delivery) ([]storage.ClaimResult, []error, error) {
	results := make([]storage.ClaimResult, len(batch))
	errs := make([]error, len(batch))
	first := make(map[identity]int, len(batch))
	var unique []int // index of the first delivery of each identity
	for i, d := range batch {
		k := identity{d.Scope, d.EventID}
		if _, seen := first[k]; !seen {
			first[k] = i
			unique = append(unique, i)
		}
	}
	// The batch outlives any one caller's context; batchTimeout bounds it.
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var fresh []int
	if s.engine == EnginePostgreSQL && !s.claimsMetHeld.Load() {
		// Most likely all new: claim at once, in one statement (see claimInOneStatement).
		fresh = unique
	} else {
		// Read first, without a transaction, so that a batch of redeliveries writes nothing
		// and sends no bodies: always on CockroachDB, and on PostgreSQL after a batch that
		// met a redelivery.
		found, err := s.existingClaims(ctx, batch, unique)
		if err != nil {
			return nil, nil, err
		}
		for _, i := range unique {
			if c, ok := found[identity{batch[i].Scope, batch[i].EventID}]; ok {
				results[i] = claimedBy(c, batch[i])
			} else {
				fresh = append(fresh, i)
			}
		}
	}
	if len(fresh) > 0 {
		slices.SortFunc(fresh, func(a, b int) int {
			return cmp.Or(strings.Compare(batch[a].Scope, batch[b].Scope), strings.Compare(batch[a].EventID, batch[b].EventID))
		})
		var err error
		if s.engine == EnginePostgreSQL {
			err = s.claimInOneStatement(ctx, batch, fresh, results)
		} else {
			err = s.inTx(ctx, "claim", s.claimTx(), func(ctx context.Context, tx pgx.Tx) error {
				return claimMany(ctx, tx, batch, fresh, results)
			})
		}
		if sqlState(err) == codeUniqueViolation {
			err = s.inTx(ctx, "claim", s.claimTx(), func(ctx context.Context, tx pgx.Tx) error {
				return claimEach(ctx, tx, batch, fresh, results, errs)
			})
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if s.engine == EnginePostgreSQL {
		s.claimsMetHeld.Store(metHeld(unique, results, errs))
	}
	var again []int
	for i, d := range batch {
		j := first[identity{d.Scope, d.EventID}]
		if j == i {
			continue
		}
		if errs[j] != nil {
			// The first failed on its own (its inbox id is taken) and claimed nothing: this
			// one, with an inbox id of its own, is claimed as if alone, not failed with it.
			again = append(again, i)
			continue
		}
		// A later delivery of an identity in the batch: a duplicate of the first.
		results[i] = results[j]
		results[i].Accepted = results[j].InboxID == d.InboxID
	}
	if len(again) > 0 {
		s.claimAgain(batch, again, results, errs)
	}
	return results, errs, nil
}

// claimAgain claims batch[i], i in idx, as a batch of their own, and sets their results or
// errors: the later deliveries of identities whose first delivery failed on its own. This is
// rare (an inbox id reused), so it costs another transaction only then. A failure of that
// transaction fails only these claims: the rest of the batch has committed.
func (s *Store) claimAgain(batch []storage.Delivery, idx []int, results []storage.ClaimResult, errs []error) {
	sub := make([]storage.Delivery, len(idx))
	for k, i := range idx {
		sub[k] = batch[i]
	}
	subResults, subErrs, err := s.commitClaims(sub)
	for k, i := range idx {
		if err != nil {
			errs[i] = err
			continue
		}
		results[i], errs[i] = subResults[k], subErrs[k]
	}
}

// existingClaims reads the claims already held for the deliveries batch[i], i in idx.
func (s *Store) existingClaims(ctx context.Context, batch []storage.Delivery, idx []int) (map[identity]storage.ClaimResult, error) {
	scopes, events := make([]string, len(idx)), make([]string, len(idx))
	for j, i := range idx {
		scopes[j], events[j] = batch[i].Scope, batch[i].EventID
	}
	var found map[identity]storage.ClaimResult
	err := s.single(ctx, "claim", func(ctx context.Context, conn *pgx.Conn) error {
		var err error
		found, err = readClaims(ctx, conn, scopes, events)
		return err
	})
	return found, err
}

// readClaims runs existingClaimsSQL. It is planned for every call (QueryExecModeExec, an
// unnamed statement) rather than once per connection: a plan cached while the claims table was
// small scans the whole table, and kept doing so as the table grew, which made a lookup of a
// few identities cost milliseconds.
func readClaims(ctx context.Context, q querier, scopes, events []string) (map[identity]storage.ClaimResult, error) {
	rows, err := q.Query(ctx, existingClaimsSQL, pgx.QueryExecModeExec, scopes, events)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	found := make(map[identity]storage.ClaimResult, len(scopes))
	for rows.Next() {
		var k identity
		var c storage.ClaimResult
		if err := rows.Scan(&k.scope, &k.eventID, &c.InboxID, &c.OperationKey, &c.FirstReceivedAt); err != nil {
			return nil, err
		}
		c.FirstReceivedAt = c.FirstReceivedAt.UTC()
		found[k] = c
	}
	return found, rows.Err()
}

// claimedBy is the result for d of a claim found held: accepted only if d's own inbox id holds
// it, which happens when an earlier run of d's batch committed after all.
func claimedBy(c storage.ClaimResult, d storage.Delivery) storage.ClaimResult {
	c.Accepted = c.InboxID == d.InboxID
	return c
}

// claimMany claims batch[i], i in idx (distinct identities), with one multi-row statement in
// tx, and settles their results.
func claimMany(ctx context.Context, tx pgx.Tx, batch []storage.Delivery, idx []int, results []storage.ClaimResult) error {
	inserted, err := runClaimBatch(ctx, tx.Conn(), batch, idx)
	if err != nil {
		return err
	}
	return settleClaims(ctx, tx, batch, idx, inserted, results)
}

// settleClaims sets the results of batch[i], i in idx, once claimBatchSQL ran: accepted for
// the identities it inserted, and for the others the claim that holds them, read now (in the
// same transaction if q is one).
func settleClaims(ctx context.Context, q querier, batch []storage.Delivery, idx []int, inserted map[identity]bool, results []storage.ClaimResult) error {
	var taken []int
	for _, i := range idx {
		d := batch[i]
		if inserted[identity{d.Scope, d.EventID}] {
			results[i] = storage.ClaimResult{Accepted: true, InboxID: d.InboxID, OperationKey: d.OperationKey,
				FirstReceivedAt: d.ReceivedAt.UTC().Truncate(time.Microsecond)}
		} else {
			taken = append(taken, i)
		}
	}
	if len(taken) == 0 {
		return nil
	}
	// Claimed by a concurrent transaction after our read, or by an earlier run of this batch
	// whose commit outcome was unknown. ON CONFLICT waited for the claimant, so under READ
	// COMMITTED a new statement sees its row.
	scopes, events := make([]string, len(taken)), make([]string, len(taken))
	for j, i := range taken {
		scopes[j], events[j] = batch[i].Scope, batch[i].EventID
	}
	found, err := readClaims(ctx, q, scopes, events)
	if err != nil {
		return err
	}
	for _, i := range taken {
		c, ok := found[identity{batch[i].Scope, batch[i].EventID}]
		if !ok {
			// The conflicting row must be visible once ON CONFLICT waited for its claimant.
			// Treat a miss as a conflict and run the transaction again.
			return fmt.Errorf("claim of %q not visible: %w", batch[i].EventID, errRunAgain)
		}
		results[i] = claimedBy(c, batch[i])
	}
	return nil
}

// claimInOneStatement is claimMany on PostgreSQL in one round trip: claimBatchSQL outside an
// explicit transaction is its own transaction, committed when it ends, so a batch of new events
// costs one statement and one commit. The identities it found held (redeliveries, or claims
// that raced with it) cost one more read. If the connection fails before the answer, the
// statement may or may not have committed; retry runs it again, and a claim then found held
// by its own inbox id went through the first time.
func (s *Store) claimInOneStatement(ctx context.Context, batch []storage.Delivery, idx []int, results []storage.ClaimResult) error {
	return s.inOneTrip(ctx, "claim", true, func(ctx context.Context, conn *pgx.Conn) error {
		inserted, err := runClaimBatch(ctx, conn, batch, idx)
		if err != nil {
			return err
		}
		return settleClaims(ctx, conn, batch, idx, inserted, results)
	})
}

// metHeld reports whether any claim of results[i], i in idx, was found held already: a
// redelivery (or a lost race).
func metHeld(idx []int, results []storage.ClaimResult, errs []error) bool {
	for _, i := range idx {
		if errs[i] == nil && !results[i].Accepted {
			return true
		}
	}
	return false
}

// claimEach claims batch[i], i in idx, one statement and savepoint per claim, so that a claim
// failing on its own (an inbox id reused) rolls back alone and reports its error in errs; any
// other failure fails the batch. It is the slow path after claimMany met a unique violation.
func claimEach(ctx context.Context, tx pgx.Tx, batch []storage.Delivery, idx []int, results []storage.ClaimResult, errs []error) error {
	for _, i := range idx {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		results[i], errs[i] = claimOne(ctx, sp, batch[i])
		if errs[i] != nil {
			if sqlState(errs[i]) != codeUniqueViolation {
				return errs[i]
			}
			errs[i] = mapError("claim", errs[i])
			if err := sp.Rollback(ctx); err != nil {
				return err
			}
			continue
		}
		if err := sp.Commit(ctx); err != nil {
			return err
		}
	}
	return nil
}

// claimOne claims one delivery inside the batch's transaction.
func claimOne(ctx context.Context, tx pgx.Tx, d storage.Delivery) (storage.ClaimResult, error) {
	body := d.Body
	if body == nil {
		// pgx sends a nil slice as NULL; the body is empty, not missing.
		body = []byte{}
	}
	var result storage.ClaimResult
	var firstReceivedAt time.Time
	err := tx.QueryRow(ctx, claimSQL, d.Scope, d.EventID, d.InboxID, d.OperationKey, d.ReceivedAt,
		d.EndpointID, d.SecretID, d.Method, d.URL, storage.EncodeHeaders(d.Headers), body,
	).Scan(&result.InboxID, &result.OperationKey, &firstReceivedAt)
	if err == nil {
		result.Accepted = true
		result.FirstReceivedAt = firstReceivedAt.UTC()
		return result, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return result, err
	}
	// Someone holds the identity; report their claim.
	err = tx.QueryRow(ctx, existingClaimSQL, d.Scope, d.EventID).
		Scan(&result.InboxID, &result.OperationKey, &firstReceivedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		// The conflicting row must be visible once ON CONFLICT waited for its claimant. Treat
		// a miss as a conflict and run the transaction again.
		return result, fmt.Errorf("claim of %q not visible: %w", d.EventID, errRunAgain)
	}
	if err != nil {
		return result, err
	}
	result.Accepted = result.InboxID == d.InboxID
	result.FirstReceivedAt = firstReceivedAt.UTC()
	return result, nil
}

// claimTx is how a claim runs. On PostgreSQL, READ COMMITTED: the primary key alone decides
// the winner, ON CONFLICT DO NOTHING waits for a concurrent claimant and then sees its
// outcome, and the follow-up read sees the winner's row. SERIALIZABLE would add nothing but
// false conflicts between claims of different identities that touch the same index page.
// CockroachDB runs SERIALIZABLE, its default and best-supported level.
func (s *Store) claimTx() txOptions {
	iso := pgx.ReadCommitted
	if s.engine == EngineCockroachDB {
		iso = pgx.Serializable
	}
	return txOptions{isolation: iso, idempotent: true}
}

// validDelivery checks the fields a claim cannot do without.
func validDelivery(d storage.Delivery) error {
	for _, f := range []struct{ name, value string }{
		{"inbox id", d.InboxID},
		{"scope", d.Scope},
		{"event id", d.EventID},
		{"endpoint id", d.EndpointID},
		{"operation key", d.OperationKey},
	} {
		if f.value == "" {
			return fmt.Errorf("%w: empty %s", storage.ErrInvalid, f.name)
		}
	}
	return nil
}

// GetDelivery returns the inbox record with the id, or ErrNotFound.
func (s *Store) GetDelivery(ctx context.Context, inboxID string) (storage.Delivery, error) {
	var d storage.Delivery
	err := s.single(ctx, "get delivery", func(ctx context.Context, conn *pgx.Conn) error {
		var headers []byte
		err := conn.QueryRow(ctx, `SELECT id, scope, event_id, endpoint_id, operation_key, secret_id,
			method, url, headers, body, received_at FROM inbox WHERE id = $1`, matchable(inboxID),
		).Scan(&d.InboxID, &d.Scope, &d.EventID, &d.EndpointID, &d.OperationKey, &d.SecretID,
			&d.Method, &d.URL, &headers, &d.Body, &d.ReceivedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil {
			return err
		}
		d.ReceivedAt = d.ReceivedAt.UTC()
		if d.Headers, err = storage.DecodeHeaders(headers); err != nil {
			return fmt.Errorf("inbox record %q: %w", inboxID, err)
		}
		return nil
	})
	if err != nil {
		return storage.Delivery{}, err
	}
	return d, nil
}

// CountDeliveries returns how many inbox records exist for the scope, or in all if it is empty.
func (s *Store) CountDeliveries(ctx context.Context, scope string) (int64, error) {
	var n int64
	err := s.single(ctx, "count deliveries", func(ctx context.Context, conn *pgx.Conn) error {
		if scope == "" {
			return conn.QueryRow(ctx, `SELECT count(*) FROM inbox`).Scan(&n)
		}
		return conn.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE scope = $1`, matchable(scope)).Scan(&n)
	})
	return n, err
}

// CommitEachClaim turns group commit off: every claim then commits alone, concurrently with
// the others (see storage.ClaimBatcher.CommitEachClaim). Call it before the store is used.
func (s *Store) CommitEachClaim() {
	for i := range s.claims {
		s.claims[i].CommitEachClaim()
	}
}

// NewInboxID returns a time-ordered inbox id on PostgreSQL and a random one on CockroachDB,
// where time-ordered keys would make one range take every insert (see storage.InboxIDSource).
func (s *Store) NewInboxID() string {
	if s.engine == EngineCockroachDB {
		return storage.RandomInboxID()
	}
	return storage.TimeOrderedInboxID()
}

// ObserveClaimBatches has f told about every claim batch of every lane (see
// storage.ClaimBatcher.ObserveBatches). Safe to call while claims run.
func (s *Store) ObserveClaimBatches(f func(storage.ClaimBatchStats)) {
	for i := range s.claims {
		s.claims[i].ObserveBatches(f)
	}
}

// lane returns the claim lane of an identity: the only one on PostgreSQL, one of claimLanes
// on CockroachDB.
func (s *Store) lane(scope, eventID string) *storage.ClaimBatcher {
	if s.engine != EngineCockroachDB {
		return &s.claims[0]
	}
	return &s.claims[laneOf(scope, eventID)]
}

// laneOf spreads identities over the claim lanes (FNV-1a); one identity always takes the same
// lane, so racing redeliveries of one event meet in one batch rather than in two transactions.
func laneOf(scope, eventID string) int {
	h := uint32(2166136261)
	for _, s := range []string{scope, "\x00", eventID} {
		for i := 0; i < len(s); i++ {
			h ^= uint32(s[i])
			h *= 16777619
		}
	}
	return int(h % claimLanes)
}
