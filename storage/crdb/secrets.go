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
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/hookverify/hookverify/storage"
)

const secretColumns = `id, endpoint_id, key_id, sealed, created_at, not_before, not_after, retired_at,
	last_used_at, fingerprint`

const insertSecret = `INSERT INTO secrets (` + secretColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`

func insertSecretArgs(sec storage.Secret) []any {
	sealed := sec.Sealed
	if sealed == nil {
		// pgx sends a nil slice as NULL; the material is empty, not missing.
		sealed = []byte{}
	}
	return []any{sec.ID, sec.EndpointID, sec.KeyID, sealed, sec.CreatedAt, nullTime(sec.NotBefore),
		nullTime(sec.NotAfter), nullTime(sec.RetiredAt), nullTime(sec.LastUsedAt), sec.Fingerprint}
}

// AddSecret stores a new secret if check takes it: ErrNotFound if the endpoint does not
// exist, ErrAlreadyExists if the secret id is taken.
func (s *Store) AddSecret(ctx context.Context, sec storage.Secret, check storage.SecretCheck) error {
	if sec.ID == "" {
		return fmt.Errorf("crdb: add secret: %w: empty secret id", storage.ErrInvalid)
	}
	var refused error
	err := s.inTx(ctx, "add secret", writeTx, func(ctx context.Context, tx pgx.Tx) error {
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

// RotateSecret stores sec, if check takes it, and, in the same transaction, expires the
// endpoint's other live secrets at expireAt. It returns the secrets it changed, oldest first.
func (s *Store) RotateSecret(ctx context.Context, sec storage.Secret, expireAt time.Time, check storage.SecretCheck) ([]storage.Secret, error) {
	if sec.ID == "" {
		return nil, fmt.Errorf("crdb: rotate secret: %w: empty secret id", storage.ErrInvalid)
	}
	if expireAt.IsZero() {
		// The zero time reads back as "no end": storing it would extend, not end, the secrets.
		return nil, fmt.Errorf("crdb: rotate secret: %w: zero expiry time", storage.ErrInvalid)
	}
	var (
		changed []storage.Secret
		refused error
	)
	// SERIALIZABLE matters here: two rotations at once must not both miss the other's new
	// secret, leaving two secrets without an end.
	err := s.inTx(ctx, "rotate secret", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		var err error
		if refused, err = insertCheckedSecret(ctx, tx, sec, check); refused != nil || err != nil {
			return cmp.Or(refused, err)
		}
		rows, err := tx.Query(ctx, `UPDATE secrets SET not_after = $3
			WHERE endpoint_id = $1 AND id <> $2 AND retired_at IS NULL
				AND (not_after IS NULL OR not_after > $3)
				AND (not_before IS NULL OR not_before <= $4)
			RETURNING `+secretColumns, sec.EndpointID, sec.ID, expireAt, sec.CreatedAt)
		if err != nil {
			return err
		}
		if changed, err = pgx.CollectRows(rows, scanSecret); err != nil {
			return err
		}
		sortSecrets(changed)
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

// insertCheckedSecret reads the endpoint of sec in tx, locked against a concurrent
// ModifyEndpoint on PostgreSQL (FOR SHARE: one that wrote it first makes this transaction fail
// to serialize and run again, on its result; CockroachDB takes no shared lock under
// SERIALIZABLE by default, and its SERIALIZABLE alone keeps the two apart), and stores sec if
// check, run on that endpoint, takes it.
// check's refusal is returned as refused, as it is; any other failure as err.
func insertCheckedSecret(ctx context.Context, tx pgx.Tx, sec storage.Secret, check storage.SecretCheck) (refused, err error) {
	rows, err := tx.Query(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = $1 FOR SHARE`, matchable(sec.EndpointID))
	if err != nil {
		return nil, err
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEndpoint)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("endpoint %q: %w", sec.EndpointID, storage.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if refused := check.On(e); refused != nil {
		return refused, nil
	}
	_, err = tx.Exec(ctx, insertSecret, insertSecretArgs(sec)...)
	return nil, err
}

// RetireSecret marks the secret retired at the given time unless it is retired already, and
// returns it as stored; ErrNotFound if the endpoint has no such secret.
func (s *Store) RetireSecret(ctx context.Context, endpointID, secretID string, at time.Time) (storage.Secret, error) {
	if at.IsZero() {
		// The zero time reads back as "not retired".
		return storage.Secret{}, fmt.Errorf("crdb: retire secret: %w: zero retirement time", storage.ErrInvalid)
	}
	var sec storage.Secret
	err := s.inTx(ctx, "retire secret", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		// Only a secret not retired yet changes, which keeps the first retirement time and
		// makes retiring idempotent; only that change is recorded.
		tag, err := tx.Exec(ctx, `UPDATE secrets SET retired_at = $3
			WHERE endpoint_id = $1 AND id = $2 AND retired_at IS NULL`, matchable(endpointID), matchable(secretID), at) // NUL: no secret, as on SQLite
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT `+secretColumns+` FROM secrets WHERE endpoint_id = $1 AND id = $2`,
			matchable(endpointID), matchable(secretID))
		if err != nil {
			return err
		}
		sec, err = pgx.CollectExactlyOneRow(rows, scanSecret)
		if errors.Is(err, pgx.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		return recordAudit(ctx, tx)
	})
	return sec, err
}

// MarkSecretsUsed moves last_used_at forward in one statement for every use.
func (s *Store) MarkSecretsUsed(ctx context.Context, uses []storage.SecretUse) error {
	if len(uses) == 0 {
		return nil
	}
	ids, endpoints, times := make([]string, len(uses)), make([]string, len(uses)), make([]time.Time, len(uses))
	for i, u := range uses {
		ids[i], endpoints[i], times[i] = u.SecretID, u.EndpointID, u.At
	}
	// One row per secret: UPDATE ... FROM with two source rows for one target row would be
	// ambiguous, so the latest use of each secret is picked first.
	return s.inTx(ctx, "mark secrets used", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE secrets SET last_used_at = used.at
			FROM (SELECT id, endpoint_id, max(at) AS at
				FROM unnest($1::TEXT[], $2::TEXT[], $3::TIMESTAMPTZ[]) AS u (id, endpoint_id, at)
				GROUP BY id, endpoint_id) AS used
			WHERE secrets.id = used.id AND secrets.endpoint_id = used.endpoint_id
				AND (secrets.last_used_at IS NULL OR secrets.last_used_at < used.at)`, ids, endpoints, times)
		return err
	})
}

// ResealSecret swaps the sealed material if the secret is still under fromKeyID.
func (s *Store) ResealSecret(ctx context.Context, endpointID, secretID, fromKeyID, toKeyID string, sealed []byte) (bool, error) {
	if sealed == nil {
		sealed = []byte{}
	}
	var done bool
	err := s.inTx(ctx, "reseal secret", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		var keyID string
		err := tx.QueryRow(ctx, `SELECT key_id FROM secrets WHERE id = $1 AND endpoint_id = $2`,
			matchable(secretID), matchable(endpointID)).Scan(&keyID) // NUL: no secret, as on SQLite
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("secret %q of endpoint %q: %w", secretID, endpointID, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if done = keyID == fromKeyID; !done {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE secrets SET key_id = $3, sealed = $4 WHERE id = $1 AND endpoint_id = $2`,
			secretID, endpointID, toKeyID, sealed); err != nil {
			return err
		}
		return recordAudit(ctx, tx)
	})
	return done, err
}

// ListSecrets returns every secret of the endpoint, retired ones included, ordered by
// CreatedAt then ID.
func (s *Store) ListSecrets(ctx context.Context, endpointID string) ([]storage.Secret, error) {
	list, err := queryAll(ctx, s, "list secrets", scanSecret, `SELECT `+secretColumns+` FROM secrets WHERE endpoint_id = $1`, matchable(endpointID))
	if err != nil {
		return nil, err
	}
	sortSecrets(list)
	return list, nil
}

// sortSecrets orders secrets by creation time, then by id compared as bytes; sorting here
// rather than with ORDER BY keeps the order independent of the database's collation.
func sortSecrets(list []storage.Secret) {
	slices.SortFunc(list, func(a, b storage.Secret) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
}

func scanSecret(row pgx.CollectableRow) (storage.Secret, error) {
	var (
		sec                                     storage.Secret
		createdAt                               time.Time
		notBefore, notAfter, retiredAt, lastUse pgtype.Timestamptz
	)
	err := row.Scan(&sec.ID, &sec.EndpointID, &sec.KeyID, &sec.Sealed, &createdAt, &notBefore, &notAfter,
		&retiredAt, &lastUse, &sec.Fingerprint)
	if err != nil {
		return sec, err
	}
	sec.CreatedAt = createdAt.UTC()
	sec.NotBefore, sec.NotAfter = fromNullTime(notBefore), fromNullTime(notAfter)
	sec.RetiredAt, sec.LastUsedAt = fromNullTime(retiredAt), fromNullTime(lastUse)
	return sec, nil
}
