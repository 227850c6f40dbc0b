package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hookverify/hookverify/storage"
)

const tokenColumns = `id, name, token_hash, scopes, created_at, last_used_at, revoked_at`

// CreateToken stores a new token; ErrAlreadyExists if the id or the hash is taken.
func (s *Store) CreateToken(ctx context.Context, t storage.Token) error {
	if t.ID == "" || t.Name == "" || len(t.Hash) == 0 {
		return s.fail("create token", fmt.Errorf("token needs an id, a name and a hash: %w", storage.ErrInvalid))
	}
	scopes, err := encodeScopes(t.Scopes)
	if err != nil {
		return s.fail("create token", err)
	}
	return s.write(ctx, "create token", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			t.ID, t.Name, t.Hash, scopes, micros(t.CreatedAt), nullMicros(t.LastUsedAt), nullMicros(t.RevokedAt))
		if err != nil {
			return err
		}
		return recordAudit(ctx, tx)
	})
}

// TokenByHash returns the token with the hash, revoked or not, or ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (storage.Token, error) {
	var t storage.Token
	err := s.read("token by hash", func(q queryer) error {
		var err error
		t, err = scanToken(q.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE token_hash = ?`, nonNil(hash)))
		if errors.Is(err, sql.ErrNoRows) {
			// The hash is not quoted: it identifies a credential.
			return fmt.Errorf("token: %w", storage.ErrNotFound)
		}
		return err
	})
	return t, err
}

// ListTokens returns every token by CreatedAt then ID.
func (s *Store) ListTokens(ctx context.Context) ([]storage.Token, error) {
	var list []storage.Token
	err := s.read("list tokens", func(q queryer) error {
		var err error
		list, err = queryRows(ctx, q, scanToken, `SELECT `+tokenColumns+` FROM tokens ORDER BY created_at, id`)
		return err
	})
	return list, err
}

// RevokeToken marks the token revoked unless it already is and returns it as stored.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (storage.Token, error) {
	if at.IsZero() {
		// The zero time reads back as "not revoked".
		return storage.Token{}, s.fail("revoke token", fmt.Errorf("zero revocation time: %w", storage.ErrInvalid))
	}
	var t storage.Token
	err := s.write(ctx, "revoke token", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`,
			micros(at), id)
		if err != nil {
			return err
		}
		revoked, err := res.RowsAffected()
		if err != nil {
			return err
		}
		t, err = scanToken(tx.QueryRowContext(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("token %q: %w", id, storage.ErrNotFound)
		}
		if err != nil || revoked == 0 {
			// Revoked before: nothing changed, so nothing to record.
			return err
		}
		return recordAudit(ctx, tx)
	})
	if err != nil {
		return storage.Token{}, err
	}
	return t, nil
}

// TouchToken moves LastUsedAt forward to at.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	return s.write(ctx, "touch token", func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM tokens WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("token %q: %w", id, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE tokens SET last_used_at = ?
			WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`, micros(at), id, micros(at))
		return err
	})
}

func scanToken(row scanner) (storage.Token, error) {
	var (
		t                   storage.Token
		scopes              string
		createdAt           int64
		lastUsed, revokedAt sql.NullInt64
	)
	if err := row.Scan(&t.ID, &t.Name, &t.Hash, &scopes, &createdAt, &lastUsed, &revokedAt); err != nil {
		return storage.Token{}, err
	}
	if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
		return storage.Token{}, fmt.Errorf("token %q: corrupt scopes: %w", t.ID, err)
	}
	t.CreatedAt = fromMicros(createdAt)
	t.LastUsedAt = fromNullMicros(lastUsed)
	t.RevokedAt = fromNullMicros(revokedAt)
	return t, nil
}

// encodeScopes stores scopes as a JSON array; nil is stored as [].
func encodeScopes(scopes []string) (string, error) {
	if scopes == nil {
		scopes = []string{}
	}
	data, err := json.Marshal(scopes)
	if err != nil {
		return "", fmt.Errorf("scopes: %w: %w", storage.ErrInvalid, err)
	}
	return string(data), nil
}
