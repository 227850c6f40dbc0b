package crdb

import (
	"context"
	"errors"
	"fmt"
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

// Claim atomically claims (d.Scope, d.EventID) and stores d as its inbox record.
//
// Concurrent claims share transactions (storage.ClaimBatcher): one commit, the expensive part
// on both engines, for every claim queued meanwhile; each claim runs in its own savepoint. A
// batch whose commit outcome is unknown (the connection broke during COMMIT, or CockroachDB
// answered 40003) runs again with the same inbox ids; a claim then found held by its own inbox
// id went through the first time and is reported accepted.
func (s *Store) Claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	if err := validDelivery(d); err != nil {
		return storage.ClaimResult{}, fmt.Errorf("crdb: claim: %w", err)
	}
	if s.closed.Load() {
		return storage.ClaimResult{}, fmt.Errorf("crdb: claim: %w", storage.ErrClosed)
	}
	lane := &s.claims[laneOf(d.Scope, d.EventID)]
	res, err := lane.Submit(ctx, d, s.commitClaims)
	if err != nil && !isSentinel(err) {
		err = fmt.Errorf("crdb: claim: %w: %w", storage.ErrUnavailable, err)
	}
	return res, err
}

// commitClaims runs the batch in one transaction, each claim in a savepoint so that a claim
// failing on its own (an inbox id reused) rolls back alone; any other failure fails the batch.
func (s *Store) commitClaims(batch []storage.Delivery) ([]storage.ClaimResult, []error, error) {
	results := make([]storage.ClaimResult, len(batch))
	errs := make([]error, len(batch))
	// The batch outlives any one caller's context; the retry loop bounds it.
	err := s.inTx(context.Background(), "claim", s.claimTx(), func(ctx context.Context, tx pgx.Tx) error {
		for i, d := range batch {
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			results[i], errs[i] = claimOne(ctx, sp, d)
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
	})
	return results, errs, err
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
			method, url, headers, body, received_at FROM inbox WHERE id = $1`, inboxID,
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
		return conn.QueryRow(ctx, `SELECT count(*) FROM inbox WHERE scope = $1`, scope).Scan(&n)
	})
	return n, err
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
