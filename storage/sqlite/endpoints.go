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

// UpdateEndpoint replaces every field but ID, Provider and CreatedAt; ErrNotFound if the
// endpoint does not exist.
func (s *Store) UpdateEndpoint(ctx context.Context, e storage.Endpoint) error {
	options, err := encodeOptions(e.Options)
	if err != nil {
		return s.fail("update endpoint", err)
	}
	return s.write(ctx, "update endpoint", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE endpoints SET timestamp_tolerance_ms = ?, max_body_bytes = ?,
			dedupe_scope = ?, disabled = ?, options = ?, updated_at = ? WHERE id = ?`,
			e.TimestampTolerance.Milliseconds(), e.MaxBodyBytes, e.DedupeScope, e.Disabled, options,
			micros(e.UpdatedAt), e.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("endpoint %q: %w", e.ID, storage.ErrNotFound)
		}
		return recordAudit(ctx, tx)
	})
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
