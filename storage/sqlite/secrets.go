package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hookverify/hookverify/storage"
)

const secretColumns = `id, endpoint_id, key_id, sealed, created_at, not_before, not_after, retired_at, last_used_at`

// secretsToExpire selects the secrets a rotation shortens: the endpoint's other secrets that
// are not retired and would otherwise outlive the grace period. Parameters: endpoint id, new
// secret id, expireAt, expireAt.
const secretsToExpire = `endpoint_id = ? AND id <> ? AND retired_at IS NULL AND (not_after IS NULL OR not_after > ?)
	AND (not_before IS NULL OR not_before <= ?)`

// AddSecret stores a new secret; ErrNotFound if the endpoint does not exist, ErrAlreadyExists
// if the secret id is taken.
func (s *Store) AddSecret(ctx context.Context, sec storage.Secret) error {
	return s.write(ctx, "add secret", func(tx *sql.Tx) error {
		return insertSecret(ctx, tx, sec)
	})
}

// RotateSecret stores sec and shortens the endpoint's other live secrets to expireAt, in one
// transaction. Because the transaction holds the write lock from its start, the secrets it
// reads are exactly the ones it updates.
func (s *Store) RotateSecret(ctx context.Context, sec storage.Secret, expireAt time.Time) ([]storage.Secret, error) {
	if expireAt.IsZero() {
		// The zero time reads back as "no end": storing it would extend, not end, the secrets.
		return nil, s.fail("rotate secret", fmt.Errorf("zero expiry time: %w", storage.ErrInvalid))
	}
	var changed []storage.Secret
	err := s.write(ctx, "rotate secret", func(tx *sql.Tx) error {
		changed = nil
		if err := insertSecret(ctx, tx, sec); err != nil {
			return err
		}
		expire := micros(expireAt)
		var err error
		changed, err = querySecrets(ctx, tx, `SELECT `+secretColumns+` FROM secrets WHERE `+secretsToExpire+`
			ORDER BY created_at, id`, sec.EndpointID, sec.ID, expire, micros(sec.CreatedAt))
		if err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE secrets SET not_after = ? WHERE `+secretsToExpire,
			expire, sec.EndpointID, sec.ID, expire, micros(sec.CreatedAt))
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != int64(len(changed)) {
			return fmt.Errorf("rotation updated %d secrets, selected %d", n, len(changed))
		}
		for i := range changed {
			changed[i].NotAfter = fromMicros(expire)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changed, nil
}

// RetireSecret marks the secret retired at the given time unless it already is, and returns
// it as stored; ErrNotFound if the endpoint has no such secret.
func (s *Store) RetireSecret(ctx context.Context, endpointID, secretID string, at time.Time) (storage.Secret, error) {
	if at.IsZero() {
		// The zero time reads back as "not retired".
		return storage.Secret{}, s.fail("retire secret", fmt.Errorf("zero retirement time: %w", storage.ErrInvalid))
	}
	var sec storage.Secret
	err := s.write(ctx, "retire secret", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE secrets SET retired_at = ?
			WHERE id = ? AND endpoint_id = ? AND retired_at IS NULL`, micros(at), secretID, endpointID)
		if err != nil {
			return err
		}
		sec, err = scanSecret(tx.QueryRowContext(ctx, `SELECT `+secretColumns+` FROM secrets
			WHERE id = ? AND endpoint_id = ?`, secretID, endpointID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("secret %q of endpoint %q: %w", secretID, endpointID, storage.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return storage.Secret{}, err
	}
	return sec, nil
}

// ListSecrets returns the endpoint's secrets, retired ones included, by CreatedAt then ID.
func (s *Store) ListSecrets(ctx context.Context, endpointID string) ([]storage.Secret, error) {
	var list []storage.Secret
	err := s.read("list secrets", func(q queryer) error {
		var err error
		list, err = querySecrets(ctx, q, `SELECT `+secretColumns+` FROM secrets WHERE endpoint_id = ?
			ORDER BY created_at, id`, endpointID)
		return err
	})
	return list, err
}

// insertSecret checks the endpoint first so that an unknown endpoint reads as ErrNotFound
// with its id; the foreign key backs this up.
func insertSecret(ctx context.Context, tx *sql.Tx, sec storage.Secret) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM endpoints WHERE id = ?`, sec.EndpointID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("endpoint %q: %w", sec.EndpointID, storage.ErrNotFound)
	}
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO secrets (`+secretColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sec.ID, sec.EndpointID, sec.KeyID, nonNil(sec.Sealed), micros(sec.CreatedAt), nullMicros(sec.NotBefore),
		nullMicros(sec.NotAfter), nullMicros(sec.RetiredAt), nullMicros(sec.LastUsedAt))
	if err != nil {
		return fmt.Errorf("secret %q: %w", sec.ID, err)
	}
	return nil
}

func querySecrets(ctx context.Context, q queryer, query string, args ...any) ([]storage.Secret, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []storage.Secret
	for rows.Next() {
		sec, err := scanSecret(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, sec)
	}
	return list, rows.Err()
}

func scanSecret(row scanner) (storage.Secret, error) {
	var (
		sec                                        storage.Secret
		createdAt                                  int64
		notBefore, notAfter, retiredAt, lastUsedAt sql.NullInt64
	)
	err := row.Scan(&sec.ID, &sec.EndpointID, &sec.KeyID, &sec.Sealed, &createdAt, &notBefore, &notAfter,
		&retiredAt, &lastUsedAt)
	if err != nil {
		return storage.Secret{}, err
	}
	sec.CreatedAt = fromMicros(createdAt)
	sec.NotBefore = fromNullMicros(notBefore)
	sec.NotAfter = fromNullMicros(notAfter)
	sec.RetiredAt = fromNullMicros(retiredAt)
	sec.LastUsedAt = fromNullMicros(lastUsedAt)
	return sec, nil
}
