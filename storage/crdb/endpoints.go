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

// writeTx is how every write runs: SERIALIZABLE, the isolation CockroachDB always offers,
// set explicitly so that PostgreSQL behaves the same.
var writeTx = txOptions{isolation: pgx.Serializable}

const endpointColumns = `id, provider, timestamp_tolerance_ms, max_body_bytes, dedupe_scope, disabled,
	options, created_at, updated_at`

// CreateEndpoint stores a new endpoint, or returns ErrAlreadyExists if the id is taken.
func (s *Store) CreateEndpoint(ctx context.Context, e storage.Endpoint) error {
	if err := e.Check(); err != nil {
		return fmt.Errorf("crdb: create endpoint: %w", err)
	}
	options, err := encodeOptions(e.Options)
	if err != nil {
		return fmt.Errorf("crdb: create endpoint: %w", err)
	}
	return s.inTx(ctx, "create endpoint", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO endpoints (`+endpointColumns+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			e.ID, e.Provider, e.TimestampTolerance.Milliseconds(), e.MaxBodyBytes, e.DedupeScope,
			e.Disabled, options, nullTime(e.CreatedAt), nullTime(e.UpdatedAt))
		if err != nil {
			return err
		}
		return recordAudit(ctx, tx)
	})
}

// GetEndpoint returns the endpoint with the id, or ErrNotFound.
func (s *Store) GetEndpoint(ctx context.Context, id string) (storage.Endpoint, error) {
	// matchable: an id with NUL names no endpoint (as on SQLite), not a malformed argument.
	return queryOne(ctx, s, "get endpoint", scanEndpoint, `SELECT `+endpointColumns+` FROM endpoints WHERE id = $1`, matchable(id))
}

// ListEndpoints returns every endpoint ordered by id.
func (s *Store) ListEndpoints(ctx context.Context) ([]storage.Endpoint, error) {
	list, err := queryAll(ctx, s, "list endpoints", scanEndpoint, `SELECT `+endpointColumns+` FROM endpoints`)
	// Sorted here, by bytes, because ORDER BY follows the database's collation, which
	// differs between servers and between PostgreSQL installations.
	slices.SortFunc(list, func(a, b storage.Endpoint) int { return strings.Compare(a.ID, b.ID) })
	return list, err
}

// ListEndpointsPage returns up to limit endpoints after the id after, ordered by id bytes
// (bytesOrder, in the comparison and the order alike): a page cut in the database's collation
// and continued after its last id by bytes would skip or repeat endpoints
// (postgresOnlyMigrations index that order).
func (s *Store) ListEndpointsPage(ctx context.Context, after string, limit int) ([]storage.Endpoint, error) {
	if limit < 1 {
		return nil, fmt.Errorf("crdb: list endpoints: %w: limit %d, want at least 1", storage.ErrInvalid, limit)
	}
	id := s.engine.bytesOrder(`id`)
	return queryAll(ctx, s, "list endpoints", scanEndpoint,
		`SELECT `+endpointColumns+` FROM endpoints WHERE `+id+` > $1 ORDER BY `+id+` LIMIT $2`, after, int64(limit))
}

// UpdateEndpoint replaces every field but ID, Provider and CreatedAt, or returns ErrNotFound.
func (s *Store) UpdateEndpoint(ctx context.Context, e storage.Endpoint) error {
	if err := e.Check(); err != nil {
		return fmt.Errorf("crdb: update endpoint: %w", err)
	}
	options, err := encodeOptions(e.Options)
	if err != nil {
		return fmt.Errorf("crdb: update endpoint: %w", err)
	}
	return s.inTx(ctx, "update endpoint", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		if _, err := updateEndpoint(ctx, tx, e, options); err != nil {
			return err
		}
		return recordAudit(ctx, tx)
	})
}

// ModifyEndpoint stores what change makes of the endpoint and its secrets, read in the same
// transaction. The read locks the row (FOR UPDATE), so a concurrent modification waits for
// this one and then reads its result; under SERIALIZABLE, PostgreSQL fails the waiter with a
// serialization error instead, and inTx runs it again, change included, on the new row. A
// secret added at the same time takes the row FOR SHARE: one that did so first has this read
// wait, and SERIALIZABLE then fails whichever of the two would not see the other.
func (s *Store) ModifyEndpoint(ctx context.Context, id string, change storage.EndpointChange) (storage.Endpoint, error) {
	var (
		stored    storage.Endpoint
		changeErr error
	)
	err := s.inTx(ctx, "modify endpoint", writeTx, func(ctx context.Context, tx pgx.Tx) error {
		changeErr = nil
		rows, err := tx.Query(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = $1 FOR UPDATE`, matchable(id))
		if err != nil {
			return err
		}
		current, err := pgx.CollectExactlyOneRow(rows, scanEndpoint)
		if errors.Is(err, pgx.ErrNoRows) {
			return storage.ErrNotFound
		}
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+secretColumns+` FROM secrets WHERE endpoint_id = $1`, current.ID)
		if err != nil {
			return err
		}
		secrets, err := pgx.CollectRows(rows, scanSecret)
		if err != nil {
			return err
		}
		sortSecrets(secrets)
		auditCtx, next, err := change.Apply(ctx, current, secrets)
		if err != nil {
			// Returned as is, not mapped to a storage error: it is the caller's refusal.
			changeErr = err
			return err
		}
		if err := next.Check(); err != nil {
			return err
		}
		options, err := encodeOptions(next.Options)
		if err != nil {
			return err
		}
		if stored, err = updateEndpoint(ctx, tx, next, options); err != nil {
			return err
		}
		return recordAudit(auditCtx, tx)
	})
	if changeErr != nil {
		return storage.Endpoint{}, changeErr
	}
	if err != nil {
		return storage.Endpoint{}, err
	}
	return stored, nil
}

// updateEndpoint writes e's mutable fields and returns the row as stored; ErrNotFound if no
// endpoint has e.ID. The update time is e's or, if that is not later, a microsecond after the
// stored one (see storage.EndpointStore.UpdateEndpoint); GREATEST ignores NULLs on both
// engines, so an unset time on either side leaves the other.
func updateEndpoint(ctx context.Context, tx pgx.Tx, e storage.Endpoint, options any) (storage.Endpoint, error) {
	rows, err := tx.Query(ctx, `UPDATE endpoints SET timestamp_tolerance_ms = $2, max_body_bytes = $3,
			dedupe_scope = $4, disabled = $5, options = $6,
			updated_at = GREATEST($7::TIMESTAMPTZ, updated_at + INTERVAL '1 microsecond') WHERE id = $1
		RETURNING `+endpointColumns,
		e.ID, e.TimestampTolerance.Milliseconds(), e.MaxBodyBytes, e.DedupeScope, e.Disabled,
		options, nullTime(e.UpdatedAt))
	if err != nil {
		return storage.Endpoint{}, err
	}
	stored, err := pgx.CollectExactlyOneRow(rows, scanEndpoint)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.Endpoint{}, storage.ErrNotFound
	}
	return stored, err
}

func scanEndpoint(row pgx.CollectableRow) (storage.Endpoint, error) {
	var (
		e                    storage.Endpoint
		toleranceMS          int64
		options              []byte
		createdAt, updatedAt pgtype.Timestamptz
	)
	err := row.Scan(&e.ID, &e.Provider, &toleranceMS, &e.MaxBodyBytes, &e.DedupeScope, &e.Disabled,
		&options, &createdAt, &updatedAt)
	if err != nil {
		return e, err
	}
	e.TimestampTolerance = time.Duration(toleranceMS) * time.Millisecond
	e.CreatedAt, e.UpdatedAt = fromNullTime(createdAt), fromNullTime(updatedAt)
	if e.Options, err = decodeOptions(options); err != nil {
		return e, fmt.Errorf("endpoint %q: %w", e.ID, err)
	}
	return e, nil
}

// encodeOptions returns the JSON for the options column: SQL NULL for nil options, so that
// nil and empty options both come back as they went in.
func encodeOptions(options map[string]string) (any, error) {
	if options == nil {
		return nil, nil
	}
	data, err := json.Marshal(options)
	if err != nil {
		return nil, fmt.Errorf("%w: options: %w", storage.ErrInvalid, err)
	}
	return string(data), nil
}

func decodeOptions(data []byte) (map[string]string, error) {
	if data == nil {
		return nil, nil
	}
	var options map[string]string
	if err := json.Unmarshal(data, &options); err != nil {
		return nil, fmt.Errorf("corrupt options: %w", err)
	}
	return options, nil
}

// nullTime stores the zero time, which the contract uses for "unset", as SQL NULL.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

// fromNullTime reads a nullable TIMESTAMPTZ back; times are returned in UTC.
func fromNullTime(t pgtype.Timestamptz) time.Time {
	if !t.Valid {
		return time.Time{}
	}
	return t.Time.UTC()
}
