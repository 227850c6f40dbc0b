package crdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookverify/hookverify/storage"
)

const tokenColumns = `id, name, token_hash, scopes, created_at, last_used_at, revoked_at`

// CreateToken stores a new token, or returns ErrAlreadyExists if the id or the hash is taken.
func (s *Store) CreateToken(ctx context.Context, t storage.Token) error {
	if t.ID == "" || t.Name == "" || len(t.Hash) == 0 {
		return fmt.Errorf("crdb: create token: %w: token needs an id, a name and a hash", storage.ErrInvalid)
	}
	scopes, err := encodeScopes(t.Scopes)
	if err != nil {
		return fmt.Errorf("crdb: create token: %w", err)
	}
	return s.inTx(ctx, "create token", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO tokens (`+tokenColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			t.ID, t.Name, t.Hash, scopes, t.CreatedAt, nullTime(t.LastUsedAt), nullTime(t.RevokedAt))
		if err != nil {
			return err
		}
		return recordAudit(ctx, tx)
	})
}

// TokenByHash returns the token with the hash, revoked or not, or ErrNotFound.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (storage.Token, error) {
	return queryOne(ctx, s, "token by hash", scanToken, `SELECT `+tokenColumns+` FROM tokens WHERE token_hash = $1`, nonNilBytes(hash))
}

// ListTokens returns every token ordered by CreatedAt then ID.
func (s *Store) ListTokens(ctx context.Context) ([]storage.Token, error) {
	list, err := queryAll(ctx, s, "list tokens", scanToken, `SELECT `+tokenColumns+` FROM tokens`)
	if err != nil {
		return nil, err
	}
	// Sorted here, ids by bytes, so the order does not depend on the database's collation.
	slices.SortFunc(list, func(a, b storage.Token) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return list, nil
}

// RevokeToken marks the token revoked unless it already is and returns it as stored.
func (s *Store) RevokeToken(ctx context.Context, id string, at time.Time) (storage.Token, error) {
	if at.IsZero() {
		// The zero time is stored as NULL, which reads back as "not revoked".
		return storage.Token{}, fmt.Errorf("crdb: revoke token: %w: zero revocation time", storage.ErrInvalid)
	}
	var t storage.Token
	err := s.inTx(ctx, "revoke token", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		// Only a token not revoked yet changes, which keeps the first revocation time and makes
		// revoking idempotent; only that change is recorded.
		// matchable: an id with NUL names no token (as on SQLite), not a malformed argument.
		tag, err := tx.Exec(ctx, `UPDATE tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`, matchable(id), at)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+tokenColumns+` FROM tokens WHERE id = $1`, matchable(id))
		if err != nil {
			return err
		}
		t, err = pgx.CollectExactlyOneRow(rows, scanToken)
		if errors.Is(err, pgx.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return recordAudit(ctx, tx)
	})
	return t, err
}

// TouchToken moves LastUsedAt forward to at.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	return s.inTx(ctx, "touch token", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE tokens SET last_used_at =
			CASE WHEN last_used_at IS NULL OR last_used_at < $2 THEN $2 ELSE last_used_at END WHERE id = $1`, id, at)
		if err == nil && tag.RowsAffected() == 0 {
			return storage.ErrNotFound
		}
		return err
	})
}

func scanToken(row pgx.CollectableRow) (storage.Token, error) {
	var (
		t                              storage.Token
		scopes                         string
		createdAt, lastUsed, revokedAt pgtype.Timestamptz
	)
	if err := row.Scan(&t.ID, &t.Name, &t.Hash, &scopes, &createdAt, &lastUsed, &revokedAt); err != nil {
		return t, err
	}
	if err := json.Unmarshal([]byte(scopes), &t.Scopes); err != nil {
		return t, fmt.Errorf("token %q: corrupt scopes: %w", t.ID, err)
	}
	t.CreatedAt, t.LastUsedAt, t.RevokedAt = fromNullTime(createdAt), fromNullTime(lastUsed), fromNullTime(revokedAt)
	return t, nil
}

// encodeScopes stores scopes as a JSON array in a TEXT column; nil is stored as [].
func encodeScopes(scopes []string) (string, error) {
	if scopes == nil {
		scopes = []string{}
	}
	data, err := json.Marshal(scopes)
	if err != nil {
		return "", fmt.Errorf("%w: scopes: %w", storage.ErrInvalid, err)
	}
	return string(data), nil
}

// nonNilBytes keeps an empty hash from being bound as NULL, which would match nothing anyway
// but reads oddly in a log.
func nonNilBytes(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}
