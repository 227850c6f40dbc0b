package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/hookverify/hookverify/storage"
)

var _ storage.AuditStore = (*Store)(nil)

const auditColumns = `id, at, actor, action, endpoint_id, secret_id, detail`

// recordAudit inserts the audit event ctx carries, if any, in the transaction of the change.
func recordAudit(ctx context.Context, tx *sql.Tx) error {
	ev, ok := storage.AuditEventFrom(ctx)
	if !ok {
		return nil
	}
	if ev.ID == "" || ev.Action == "" {
		return fmt.Errorf("%w: audit event without id or action", storage.ErrInvalid)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO audit_events (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		ev.ID, micros(ev.At), ev.Actor, ev.Action, ev.EndpointID, ev.SecretID, ev.Detail)
	if err != nil {
		return fmt.Errorf("record audit event: %w", err)
	}
	return nil
}

// ListAuditEvents returns matching events oldest first.
func (s *Store) ListAuditEvents(ctx context.Context, f storage.AuditFilter) ([]storage.AuditEvent, error) {
	if f.Limit < 1 {
		return nil, s.fail("list audit events", fmt.Errorf("%w: limit %d, want at least 1", storage.ErrInvalid, f.Limit))
	}
	query, args := `SELECT `+auditColumns+` FROM audit_events WHERE 1 = 1`, []any{}
	if f.EndpointID != "" {
		query += ` AND endpoint_id = ?`
		args = append(args, f.EndpointID)
	}
	if !f.Since.IsZero() {
		query += ` AND at >= ?`
		args = append(args, micros(f.Since))
	}
	if !f.Until.IsZero() {
		query += ` AND at < ?`
		args = append(args, micros(f.Until))
	}
	if !f.After.IsZero() {
		// A row value, which SQLite compares in the (at, id) indexes' order (TEXT compares
		// bytes here).
		query += ` AND (at, id) > (?, ?)`
		args = append(args, micros(f.After.At), f.After.ID)
	}
	query += ` ORDER BY at, id LIMIT ?`
	args = append(args, f.Limit)
	var list []storage.AuditEvent
	err := s.read("list audit events", func(q queryer) error {
		rows, err := q.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var ev storage.AuditEvent
			var at int64
			if err := rows.Scan(&ev.ID, &at, &ev.Actor, &ev.Action, &ev.EndpointID, &ev.SecretID, &ev.Detail); err != nil {
				return err
			}
			ev.At = fromMicros(at)
			list = append(list, ev)
		}
		return rows.Err()
	})
	return list, err
}
