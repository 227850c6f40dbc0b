package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hookverify/hookverify/storage"
)

const secretColumns = `id, endpoint_id, key_id, sealed, created_at, not_before, not_after, retired_at, last_used_at,
	fingerprint`

// secretsOfEndpoint lists an endpoint's secrets in ListSecrets' order. Parameter: endpoint id.
const secretsOfEndpoint = `SELECT ` + secretColumns + ` FROM secrets WHERE endpoint_id = ? ORDER BY created_at, id`

// secretsToExpire selects the secrets a rotation shortens: the endpoint's other secrets that
// are not retired and would otherwise outlive the grace period. Parameters: endpoint id, new
// secret id, expireAt, expireAt.
const secretsToExpire = `endpoint_id = ? AND id <> ? AND retired_at IS NULL AND (not_after IS NULL OR not_after > ?)
	AND (not_before IS NULL OR not_before <= ?)`

// AddSecret stores a new secret; ErrNotFound if the endpoint does not exist, ErrAlreadyExists
// if the secret id is taken.
func (s *Store) AddSecret(ctx context.Context, sec storage.Secret, check storage.SecretCheck) error {
	if sec.ID == "" {
		return s.fail("add secret", fmt.Errorf("%w: empty secret id", storage.ErrInvalid))
	}
	var refused error
	err := s.write(ctx, "add secret", func(tx *sql.Tx) error {
		var err error
		if refused, err = insertCheckedSecret(ctx, tx, sec, check); refused != nil || err != nil {
			return cmp.Or(refused, err)
		}
		return recordAudit(ctx, tx)
	})
	if refused != nil {
		return refused
	}
	return err
}

// RotateSecret stores sec and shortens the endpoint's other live secrets to expireAt, in one
// transaction. Because the transaction holds the write lock from its start, the secrets it
// reads are exactly the ones it updates.
func (s *Store) RotateSecret(ctx context.Context, sec storage.Secret, expireAt time.Time, check storage.SecretCheck) ([]storage.Secret, error) {
	if sec.ID == "" {
		return nil, s.fail("rotate secret", fmt.Errorf("%w: empty secret id", storage.ErrInvalid))
	}
	if expireAt.IsZero() {
		// The zero time reads back as "no end": storing it would extend, not end, the secrets.
		return nil, s.fail("rotate secret", fmt.Errorf("zero expiry time: %w", storage.ErrInvalid))
	}
	var (
		changed []storage.Secret
		refused error
	)
	err := s.write(ctx, "rotate secret", func(tx *sql.Tx) error {
		changed = nil
		var err error
		if refused, err = insertCheckedSecret(ctx, tx, sec, check); refused != nil || err != nil {
			return cmp.Or(refused, err)
		}
		expire := micros(expireAt)
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
		return recordAudit(storage.WithEndedByRotation(ctx, changed), tx)
	})
	if refused != nil {
		return nil, refused
	}
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
		retired, err := affected(tx.ExecContext(ctx, `UPDATE secrets SET retired_at = ?
			WHERE id = ? AND endpoint_id = ? AND retired_at IS NULL`, micros(at), secretID, endpointID))
		if err != nil {
			return err
		}
		sec, err = scanSecret(tx.QueryRowContext(ctx, `SELECT `+secretColumns+` FROM secrets
			WHERE id = ? AND endpoint_id = ?`, secretID, endpointID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("secret %q of endpoint %q: %w", secretID, endpointID, storage.ErrNotFound)
		}
		if err != nil || !retired {
			// Retired before: nothing changed, so nothing to record (the first retirement's
			// record stands, with its caller and time).
			return err
		}
		return recordAudit(ctx, tx)
	})
	if err != nil {
		return storage.Secret{}, err
	}
	return sec, nil
}

// MarkSecretsUsed moves last_used_at forward, one statement per use, in one transaction.
func (s *Store) MarkSecretsUsed(ctx context.Context, uses []storage.SecretUse) error {
	if len(uses) == 0 {
		return nil
	}
	return s.write(ctx, "mark secrets used", func(tx *sql.Tx) error {
		for _, u := range uses {
			_, err := tx.ExecContext(ctx, `UPDATE secrets SET last_used_at = ?
				WHERE id = ? AND endpoint_id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
				micros(u.At), u.SecretID, u.EndpointID, micros(u.At))
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// ResealSecret swaps the sealed material if the secret is still under fromKeyID.
func (s *Store) ResealSecret(ctx context.Context, endpointID, secretID, fromKeyID, toKeyID string, sealed []byte) (bool, error) {
	var done bool
	err := s.write(ctx, "reseal secret", func(tx *sql.Tx) error {
		var err error
		done, err = affected(tx.ExecContext(ctx, `UPDATE secrets SET key_id = ?, sealed = ?
			WHERE id = ? AND endpoint_id = ? AND key_id = ?`, toKeyID, nonNil(sealed), secretID, endpointID, fromKeyID))
		if err != nil {
			return err
		}
		if !done {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM secrets WHERE id = ? AND endpoint_id = ?`, secretID, endpointID).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("secret %q of endpoint %q: %w", secretID, endpointID, storage.ErrNotFound)
			}
			return err
		}
		return recordAudit(ctx, tx)
	})
	return done, err
}

// ListSecrets returns the endpoint's secrets, retired ones included, by CreatedAt then ID.
func (s *Store) ListSecrets(ctx context.Context, endpointID string) ([]storage.Secret, error) {
	var list []storage.Secret
	err := s.read("list secrets", func(q queryer) error {
		var err error
		list, err = querySecrets(ctx, q, secretsOfEndpoint, endpointID)
		return err
	})
	return list, err
}

// insertCheckedSecret reads the endpoint of sec in tx, so that an unknown endpoint reads as
// ErrNotFound with its id (the foreign key backs this up), and stores sec if check, run on
// that endpoint, takes it. check's refusal is returned as refused, as it is; any other
// failure as err.
func insertCheckedSecret(ctx context.Context, tx *sql.Tx, sec storage.Secret, check storage.SecretCheck) (refused, err error) {
	e, err := scanEndpoint(tx.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = ?`, sec.EndpointID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("endpoint %q: %w", sec.EndpointID, storage.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if refused := check.On(e); refused != nil {
		return refused, nil
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO secrets (`+secretColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		sec.ID, sec.EndpointID, sec.KeyID, nonNil(sec.Sealed), micros(sec.CreatedAt), nullMicros(sec.NotBefore),
		nullMicros(sec.NotAfter), nullMicros(sec.RetiredAt), nullMicros(sec.LastUsedAt), sec.Fingerprint)
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", sec.ID, err)
	}
	return nil, nil
}

func querySecrets(ctx context.Context, q queryer, query string, args ...any) ([]storage.Secret, error) {
	return queryRows(ctx, q, scanSecret, query, args...)
}

// queryRows runs a query and scans every row with scan.
func queryRows[T any](ctx context.Context, q queryer, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var list []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		list = append(list, v)
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
		&retiredAt, &lastUsedAt, &sec.Fingerprint)
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
