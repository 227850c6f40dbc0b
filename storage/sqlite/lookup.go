package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hookverify/hookverify/storage"
)

// LookupClaim returns the claim of (scope, eventID), or ErrNotFound. It writes nothing, but for
// the checkpoint that rescues a deleted log (filesGone), which fails it with ErrUnavailable.
func (s *Store) LookupClaim(ctx context.Context, scope, eventID string) (storage.ClaimResult, error) {
	var c storage.ClaimResult
	err := s.read("lookup claim", func(q queryer) error {
		var first int64
		err := q.QueryRowContext(ctx, `SELECT inbox_id, operation_key, first_received_at FROM claims
			WHERE scope = ? AND event_id = ?`, scope, eventID).Scan(&c.InboxID, &c.OperationKey, &first)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("claim: %w", storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		c.FirstReceivedAt = fromMicros(first)
		// The claim found answers DUPLICATE, "stored": not if the files showing it were
		// deleted (see commitClaims).
		if err := s.filesGone(); err != nil {
			return unavailable(err)
		}
		return nil
	})
	if err != nil {
		return storage.ClaimResult{}, err
	}
	return c, nil
}
