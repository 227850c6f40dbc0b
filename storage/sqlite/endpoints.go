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

const endpointColumns = `id, provider, timestamp_tolerance_ms, max_body_bytes, dedupe_scope, disabled,
	options, created_at, updated_at`

// CreateEndpoint stores a new endpoint; ErrAlreadyExists if the id is taken.
func (s *Store) CreateEndpoint(ctx context.Context, e storage.Endpoint) error {
	if err := e.Check(); err != nil {
		return s.fail("create endpoint", err)
	}
	options, err := encodeOptions(e.Options)
	if err != nil {
		return s.fail("create endpoint", err)
	}
	return s.write(ctx, "create endpoint", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO endpoints (`+endpointColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, e.Provider, e.TimestampTolerance.Milliseconds(), e.MaxBodyBytes, e.DedupeScope, e.Disabled,
			options, micros(e.CreatedAt), micros(e.UpdatedAt))
		if err != nil {
			return err
		}
		return recordAudit(ctx, tx)
	})
}

// GetEndpoint returns the endpoint with the id, or ErrNotFound.
func (s *Store) GetEndpoint(ctx context.Context, id string) (storage.Endpoint, error) {
	var e storage.Endpoint
	err := s.read("get endpoint", func(q queryer) error {
		var err error
		e, err = scanEndpoint(q.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("endpoint %q: %w", id, storage.ErrNotFound)
		}
		return err
	})
	return e, err
}

// ListEndpoints returns every endpoint ordered by id, compared byte by byte.
func (s *Store) ListEndpoints(ctx context.Context) ([]storage.Endpoint, error) {
	var list []storage.Endpoint
	err := s.read("list endpoints", func(q queryer) error {
		var err error
		list, err = queryRows(ctx, q, scanEndpoint, `SELECT `+endpointColumns+` FROM endpoints ORDER BY id`)
		return err
	})
	return list, err
}

// ListEndpointsPage returns up to limit endpoints after the id after, ordered by id: TEXT
// compares bytes here, in the primary key's order.
func (s *Store) ListEndpointsPage(ctx context.Context, after string, limit int) ([]storage.Endpoint, error) {
	if limit < 1 {
		return nil, s.fail("list endpoints", fmt.Errorf("%w: limit %d, want at least 1", storage.ErrInvalid, limit))
	}
	var list []storage.Endpoint
	err := s.read("list endpoints", func(q queryer) error {
		var err error
		list, err = queryRows(ctx, q, scanEndpoint, `SELECT `+endpointColumns+` FROM endpoints WHERE id > ? ORDER BY id LIMIT ?`, after, limit)
		return err
	})
	return list, err
}

// UpdateEndpoint replaces every field but ID, Provider and CreatedAt; ErrNotFound if the
// endpoint does not exist.
func (s *Store) UpdateEndpoint(ctx context.Context, e storage.Endpoint) error {
	if err := e.Check(); err != nil {
		return s.fail("update endpoint", err)
	}
	options, err := encodeOptions(e.Options)
	if err != nil {
		return s.fail("update endpoint", err)
	}
	return s.write(ctx, "update endpoint", func(tx *sql.Tx) error {
		if _, err := updateEndpoint(ctx, tx, e, options); err != nil {
			return err
		}
		return recordAudit(ctx, tx)
	})
}

// ModifyEndpoint stores what change makes of the endpoint and its secrets, read in the write
// transaction: the single writer holds the database from the read to the commit, so nothing
// comes between.
func (s *Store) ModifyEndpoint(ctx context.Context, id string, change storage.EndpointChange) (storage.Endpoint, error) {
	var (
		stored    storage.Endpoint
		changeErr error
	)
	err := s.write(ctx, "modify endpoint", func(tx *sql.Tx) error {
		current, err := scanEndpoint(tx.QueryRowContext(ctx, `SELECT `+endpointColumns+` FROM endpoints WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("endpoint %q: %w", id, storage.ErrNotFound)
		}
		if err != nil {
			return err
		}
		secrets, err := querySecrets(ctx, tx, secretsOfEndpoint, id)
		if err != nil {
			return err
		}
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
// stored one (see storage.EndpointStore.UpdateEndpoint).
func updateEndpoint(ctx context.Context, tx *sql.Tx, e storage.Endpoint, options string) (storage.Endpoint, error) {
	stored, err := scanEndpoint(tx.QueryRowContext(ctx, `UPDATE endpoints SET timestamp_tolerance_ms = ?, max_body_bytes = ?,
			dedupe_scope = ?, disabled = ?, options = ?, updated_at = max(?, updated_at + 1) WHERE id = ?
		RETURNING `+endpointColumns,
		e.TimestampTolerance.Milliseconds(), e.MaxBodyBytes, e.DedupeScope, e.Disabled, options,
		micros(e.UpdatedAt), e.ID))
	if errors.Is(err, sql.ErrNoRows) {
		return storage.Endpoint{}, fmt.Errorf("endpoint %q: %w", e.ID, storage.ErrNotFound)
	}
	return stored, err
}

type scanner interface {
	Scan(dest ...any) error
}

func scanEndpoint(row scanner) (storage.Endpoint, error) {
	var (
		e                    storage.Endpoint
		toleranceMS          int64
		options              string
		createdAt, updatedAt int64
	)
	err := row.Scan(&e.ID, &e.Provider, &toleranceMS, &e.MaxBodyBytes, &e.DedupeScope, &e.Disabled,
		&options, &createdAt, &updatedAt)
	if err != nil {
		return storage.Endpoint{}, err
	}
	e.TimestampTolerance = time.Duration(toleranceMS) * time.Millisecond
	if e.Options, err = decodeOptions(options); err != nil {
		return storage.Endpoint{}, fmt.Errorf("endpoint %q: %w", e.ID, err)
	}
	e.CreatedAt = fromMicros(createdAt)
	e.UpdatedAt = fromMicros(updatedAt)
	return e, nil
}

// encodeOptions stores options as a JSON object; nil and empty are both "{}".
func encodeOptions(options map[string]string) (string, error) {
	if len(options) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(options)
	if err != nil {
		return "", fmt.Errorf("options: %w: %w", storage.ErrInvalid, err)
	}
	return string(b), nil
}

// decodeOptions returns nil for no options, so callers see one form of "none".
func decodeOptions(text string) (map[string]string, error) {
	var options map[string]string
	if err := json.Unmarshal([]byte(text), &options); err != nil {
		return nil, fmt.Errorf("corrupt options: %w", err)
	}
	if len(options) == 0 {
		return nil, nil
	}
	return options, nil
}
