package crdb

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/storage"
)

// LookupClaim returns the claim of (scope, eventID), or ErrNotFound. It writes nothing.
func (s *Store) LookupClaim(ctx context.Context, scope, eventID string) (storage.ClaimResult, error) {
	var c storage.ClaimResult
	err := s.single(ctx, "lookup claim", func(ctx context.Context, conn *pgx.Conn) error {
		err := conn.QueryRow(ctx, `SELECT inbox_id, operation_key, first_received_at FROM claims
			WHERE scope = $1 AND event_id = $2`, matchable(scope), matchable(eventID)).Scan(&c.InboxID, &c.OperationKey, &c.FirstReceivedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return storage.ErrNotFound
		}
		return err
	})
	if err != nil {
		return storage.ClaimResult{}, err
	}
	c.FirstReceivedAt = c.FirstReceivedAt.UTC()
	return c, nil
}
