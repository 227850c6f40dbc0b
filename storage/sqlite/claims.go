package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

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

// claimOnce queues the claim for the next group commit (storage.ClaimBatcher: one
// transaction, so one fsync, for every claim queued meanwhile) and waits for its outcome.
func (s *Store) claimOnce(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	res, err := s.claims.Submit(ctx, d, s.commitClaims)
	if err != nil {
		return storage.ClaimResult{}, s.fail("claim", err)
	}
	return res, nil
}

// commitClaims runs every claim of the batch in one write transaction, each inside a savepoint
// so that one claim's failure rolls back only that claim.
func (s *Store) commitClaims(batch []storage.Delivery) ([]storage.ClaimResult, []error, error) {
	// The batch outlives any one caller's context; the busy timeout bounds it.
	ctx := context.Background()
	results := make([]storage.ClaimResult, len(batch))
	errs := make([]error, len(batch))
	err := s.write(ctx, "claim", func(tx *sql.Tx) error {
		for i, d := range batch {
			if _, err := tx.ExecContext(ctx, "SAVEPOINT claim"); err != nil {
				return err
			}
			results[i], errs[i] = claimInTx(ctx, tx, d)
			end := "RELEASE claim"
			if errs[i] != nil {
				errs[i] = s.fail("claim", errs[i])
				end = "ROLLBACK TO claim; RELEASE claim"
			}
			if _, err := tx.ExecContext(ctx, end); err != nil {
				return fmt.Errorf("ending the savepoint: %w", err)
			}
		}
		return nil
	})
	return results, errs, err
}

// claimInTx claims d inside tx; tx holds the write lock, so no other claim can slip in between
// the claim insert and the inbox insert.
func claimInTx(ctx context.Context, tx *sql.Tx, d storage.Delivery) (storage.ClaimResult, error) {
	var res storage.ClaimResult
	ins, err := tx.ExecContext(ctx, `INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
		VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, event_id) DO NOTHING`,
		d.Scope, d.EventID, d.InboxID, d.OperationKey, micros(d.ReceivedAt))
	if err != nil {
		return res, err
	}
	n, err := ins.RowsAffected()
	if err != nil {
		return res, err
	}
	if n == 0 {
		var first int64
		err := tx.QueryRowContext(ctx, `SELECT inbox_id, operation_key, first_received_at FROM claims
			WHERE scope = ? AND event_id = ?`, d.Scope, d.EventID).Scan(&res.InboxID, &res.OperationKey, &first)
		if err != nil {
			return res, err
		}
		res.FirstReceivedAt = fromMicros(first)
		// Held by our own inbox id: an earlier attempt of this very claim committed.
		res.Accepted = res.InboxID == d.InboxID
		return res, nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id,
		method, url, headers, body, received_at, state, attempts, visible_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', 0, ?)`,
		d.InboxID, d.Scope, d.EventID, d.EndpointID, d.OperationKey, d.SecretID, d.Method, d.URL,
		storage.EncodeHeaders(d.Headers), nonNil(d.Body), micros(d.ReceivedAt), micros(d.ReceivedAt))
	if err != nil {
		return storage.ClaimResult{}, fmt.Errorf("inbox record %q: %w", d.InboxID, err)
	}
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
