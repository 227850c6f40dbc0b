package crdb

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/storage"
)

var _ storage.AuditStore = (*Store)(nil)

const auditColumns = `id, at, actor, action, endpoint_id, secret_id, detail`

// recordAudit inserts the audit event ctx carries, if any, in the transaction of the change.
func recordAudit(ctx context.Context, tx pgx.Tx) error {
	ev, ok := storage.AuditEventFrom(ctx)
	if !ok {
		return nil
	}
	if ev.ID == "" || ev.Action == "" {
		return fmt.Errorf("%w: audit event without id or action", storage.ErrInvalid)
	}
	_, err := tx.Exec(ctx, `INSERT INTO audit_events (`+auditColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
		ev.ID, ev.At, ev.Actor, ev.Action, ev.EndpointID, ev.SecretID, ev.Detail)
	if err != nil {
		return fmt.Errorf("record audit event: %w", err)
	}
	return nil
}

// ListAuditEvents returns matching events oldest first.
func (s *Store) ListAuditEvents(ctx context.Context, f storage.AuditFilter) ([]storage.AuditEvent, error) {
	if f.Limit < 1 {
		return nil, fmt.Errorf("crdb: list audit events: %w: limit %d, want at least 1", storage.ErrInvalid, f.Limit)
	}
	var p params
	query := `SELECT ` + auditColumns + ` FROM audit_events WHERE TRUE`
	if f.EndpointID != "" {
		if strings.IndexByte(f.EndpointID, 0) >= 0 {
			// No endpoint id holds NUL: no event, as on SQLite. Not matchable's "", which is
			// the endpoint of every event of no endpoint (token.create, token.revoke).
			return nil, nil
		}
		query += ` AND endpoint_id = ` + p.add(f.EndpointID)
	}
	if !f.Since.IsZero() {
		query += ` AND at >= ` + p.add(f.Since)
	}
	if !f.Until.IsZero() {
		query += ` AND at < ` + p.add(f.Until)
	}
	// Ids are ordered, and compared with the key's, by their bytes, as a page token's id was
	// taken from the page (bytesOrder): in the database's collation a page's last events at
	// one instant, and the place after them, would not be those by bytes, and events sharing
	// a time (a rotation's, a rekey's) would be skipped or repeated across pages. The (at, id)
	// indexes still serve the time: PostgreSQL sorts each instant's few ids.
	id := s.engine.bytesOrder(`id`)
	if !f.After.IsZero() {
		// The first condition alone bounds the index scan; the second drops the key's
		// instant's ids up to the key's.
		after := p.add(f.After.At)
		query += ` AND at >= ` + after + ` AND (at > ` + after + ` OR ` + id + ` > ` + p.add(f.After.ID) + `)`
	}
	query += ` ORDER BY at, ` + id + ` LIMIT ` + p.add(int64(f.Limit))
	var list []storage.AuditEvent
	err := s.single(ctx, "list audit events", func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, query, p...)
		if err != nil {
			return err
		}
		list, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (storage.AuditEvent, error) {
			var ev storage.AuditEvent
			err := row.Scan(&ev.ID, &ev.At, &ev.Actor, &ev.Action, &ev.EndpointID, &ev.SecretID, &ev.Detail)
			ev.At = ev.At.UTC()
			return ev, err
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	return list, nil
}
