package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// migrations are the schema steps, applied in order, each once, each in its own transaction
// together with its row in schema_migrations. Append only: a released step never changes.
// Column names match the PostgreSQL backend (storage/crdb) so the two schemas read alike.
var migrations = []string{
	1: `CREATE TABLE IF NOT EXISTS endpoints (
		id                     TEXT    NOT NULL PRIMARY KEY,
		provider               TEXT    NOT NULL,
		timestamp_tolerance_ms INTEGER NOT NULL,
		max_body_bytes         INTEGER NOT NULL,
		dedupe_scope           TEXT    NOT NULL,
		disabled               INTEGER NOT NULL CHECK (disabled IN (0, 1)),
		options                TEXT    NOT NULL DEFAULT '{}',
		created_at             INTEGER NOT NULL,
		updated_at             INTEGER NOT NULL
	) STRICT`,
	2: `CREATE TABLE IF NOT EXISTS secrets (
		id           TEXT    NOT NULL PRIMARY KEY,
		endpoint_id  TEXT    NOT NULL REFERENCES endpoints (id),
		key_id       TEXT    NOT NULL,
		sealed       BLOB    NOT NULL,
		created_at   INTEGER NOT NULL,
		not_before   INTEGER,
		not_after    INTEGER,
		retired_at   INTEGER,
		last_used_at INTEGER
	) STRICT`,
	3: `CREATE INDEX IF NOT EXISTS secrets_endpoint_id ON secrets (endpoint_id, created_at, id)`,
	4: `CREATE TABLE IF NOT EXISTS claims (
		scope             TEXT    NOT NULL,
		event_id          TEXT    NOT NULL,
		inbox_id          TEXT    NOT NULL,
		operation_key     TEXT    NOT NULL,
		first_received_at INTEGER NOT NULL,
		PRIMARY KEY (scope, event_id)
	) STRICT, WITHOUT ROWID`,
	5: `CREATE TABLE IF NOT EXISTS inbox (
		id            TEXT    NOT NULL PRIMARY KEY,
		scope         TEXT    NOT NULL,
		event_id      TEXT    NOT NULL,
		endpoint_id   TEXT    NOT NULL,
		operation_key TEXT    NOT NULL,
		secret_id     TEXT    NOT NULL,
		method        TEXT    NOT NULL,
		url           TEXT    NOT NULL,
		headers       BLOB    NOT NULL,
		body          BLOB    NOT NULL,
		received_at   INTEGER NOT NULL
	) STRICT`,
	6: `CREATE INDEX IF NOT EXISTS inbox_scope ON inbox (scope)`,
	// The inbox's delivery state (storage.InboxStore). Existing rows become pending deliveries
	// visible since they were received; ADD COLUMN needs a constant default for NOT NULL, so
	// step 10 sets visible_at.
	7:  `ALTER TABLE inbox ADD COLUMN state TEXT NOT NULL DEFAULT 'pending'`,
	8:  `ALTER TABLE inbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0`,
	9:  `ALTER TABLE inbox ADD COLUMN visible_at INTEGER NOT NULL DEFAULT 0`,
	10: `UPDATE inbox SET visible_at = received_at WHERE visible_at = 0`,
	11: `ALTER TABLE inbox ADD COLUMN lease_token TEXT`,
	12: `ALTER TABLE inbox ADD COLUMN leased_until INTEGER`,
	13: `ALTER TABLE inbox ADD COLUMN acked_at INTEGER`,
	14: `ALTER TABLE inbox ADD COLUMN dead_at INTEGER`,
	15: `ALTER TABLE inbox ADD COLUMN last_error TEXT`,
	// Lease scans pending rows by visible_at and expired leases by state; ListDeadLetters reads
	// dead rows in the same order; Sweep finds acked rows by state.
	16: `CREATE INDEX IF NOT EXISTS inbox_state_visible_at ON inbox (state, visible_at, id)`,
	17: `CREATE INDEX IF NOT EXISTS inbox_endpoint_id_state ON inbox (endpoint_id, state)`,
	18: `CREATE INDEX IF NOT EXISTS claims_first_received_at ON claims (first_received_at)`,
	// Secret fingerprints (empty for secrets stored before them) and the audit trail.
	19: `ALTER TABLE secrets ADD COLUMN fingerprint TEXT NOT NULL DEFAULT ''`,
	20: `CREATE TABLE IF NOT EXISTS audit_events (
		id          TEXT    NOT NULL PRIMARY KEY,
		at          INTEGER NOT NULL,
		actor       TEXT    NOT NULL,
		action      TEXT    NOT NULL,
		endpoint_id TEXT    NOT NULL,
		secret_id   TEXT    NOT NULL,
		detail      TEXT    NOT NULL
	) STRICT`,
	21: `CREATE INDEX IF NOT EXISTS audit_events_at ON audit_events (at, id)`,
	22: `CREATE INDEX IF NOT EXISTS audit_events_endpoint_id ON audit_events (endpoint_id, at, id)`,
	// Callers' API tokens (storage.TokenStore), hashed; the UNIQUE hash is the lookup index.
	23: `CREATE TABLE IF NOT EXISTS tokens (
		id           TEXT    NOT NULL PRIMARY KEY,
		name         TEXT    NOT NULL,
		token_hash   BLOB    NOT NULL UNIQUE,
		scopes       TEXT    NOT NULL,
		created_at   INTEGER NOT NULL,
		last_used_at INTEGER,
		revoked_at   INTEGER
	) STRICT`,
	// The inbox monitor (InboxStats) counts unfinished deliveries per endpoint and state: a
	// covering index lets it read the index instead of every 2 KiB row.
	24: `CREATE INDEX IF NOT EXISTS inbox_state_endpoint_id_visible_at ON inbox (state, endpoint_id, visible_at)`,
	// The pending deliveries per endpoint, which InboxStats reads instead of counting them:
	// counting took time in proportion to the pending deliveries and, every second, showed in
	// the latency of everything else once tens of thousands waited. (Leased and dead deliveries
	// are few unless something is badly wrong, and are still counted.) Every write that moves
	// a delivery into or out of pending updates its count in the same transaction (addPending:
	// claim batches, Lease, Nack, Requeue); an ack, the worker's most frequent write, is from
	// leased and writes no count. Triggers would have kept the count whoever writes, but an
	// AFTER UPDATE trigger on the inbox made every lease and ack pay for it, 10-20 % in
	// BenchmarkLeaseAck. A count that falls to zero stays, n = 0. Open recounts the table from
	// the inbox (recountPending), as this step does once here. A process of an earlier release
	// writing to the same file does not count: run one release per file (README).
	25: `CREATE TABLE inbox_pending (
		endpoint_id TEXT    NOT NULL PRIMARY KEY,
		n           INTEGER NOT NULL
	) STRICT, WITHOUT ROWID;
	INSERT INTO inbox_pending (endpoint_id, n)
		SELECT endpoint_id, count(*) FROM inbox WHERE state = 'pending' GROUP BY endpoint_id`,
	// A lease filtered by endpoint picks each endpoint's due deliveries in (visible_at, id)
	// order along this index (storage.InboxFilter.ByEndpoint). Before it, SQLite took such a
	// lease along (state, visible_at, id) and skipped every due delivery of the other
	// endpoints: 0.3 s per lease of an endpoint with nothing waiting behind 137,000 pending
	// deliveries of another. It serves InboxStats too, so the index of step 24 goes.
	26: `CREATE INDEX IF NOT EXISTS inbox_state_endpoint_id_visible_at_id ON inbox (state, endpoint_id, visible_at, id);
	DROP INDEX IF EXISTS inbox_state_endpoint_id_visible_at`,
}

// recountPendingSQL sets inbox_pending from the inbox itself.
const recountPendingSQL = `DELETE FROM inbox_pending;
	INSERT INTO inbox_pending (endpoint_id, n)
		SELECT endpoint_id, count(*) FROM inbox WHERE state = 'pending' GROUP BY endpoint_id`

// recountPending recounts inbox_pending from the inbox, in one write transaction. Open does it
// after migrating: a process of a release before migration 25, writing to the same file,
// would have changed deliveries without counting them, and a restart then sets that right. It
// reads the pending deliveries' index entries once (about 10 ms per 100,000).
func (s *Store) recountPending(ctx context.Context) error {
	return s.write(ctx, "recount pending deliveries", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, recountPendingSQL)
		return err
	})
}

// Migrate applies the pending migrations. Each step runs in an IMMEDIATE transaction that
// first checks schema_migrations, so processes migrating the same file at once apply each
// step exactly once.
func (s *Store) Migrate(ctx context.Context) error {
	if s.closed.Load() {
		return s.fail("migrate", storage.ErrClosed)
	}
	if _, err := s.writer.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return s.fail("migrate", unavailable(err))
	}
	if err := s.refuseNewerSchema(ctx); err != nil {
		return s.fail("migrate", err)
	}
	for version := 1; version < len(migrations); version++ {
		err := s.write(ctx, fmt.Sprintf("migrate to version %d", version), func(tx *sql.Tx) error {
			var applied int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM schema_migrations WHERE version = ?`, version).Scan(&applied)
			if err == nil {
				return nil
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
				return unavailable(err)
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`,
				version, micros(time.Now()))
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// refuseNewerSchema fails when the file records a step this release does not have: a newer
// release migrated it (a rollback to this binary, say). This code does not know what that step
// changed (a count it would not keep, like migration 25's for the releases before it) and
// would run on a schema it was not written for, so it refuses; ErrInvalid, because no retry
// mends it and serve then stops with this error rather than wait for ever.
func (s *Store) refuseNewerSchema(ctx context.Context) error {
	rows, err := s.writer.QueryContext(ctx, `SELECT version FROM schema_migrations WHERE version >= ? ORDER BY version`, len(migrations))
	if err != nil {
		return unavailable(err)
	}
	defer rows.Close()
	var unknown []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return unavailable(err)
		}
		unknown = append(unknown, v)
	}
	if err := rows.Err(); err != nil {
		return unavailable(err)
	}
	if len(unknown) > 0 {
		return fmt.Errorf("%w: the database holds migrations %v, which this release does not know: a newer release of hookverify migrated it; run that release or a later one", storage.ErrInvalid, unknown)
	}
	return nil
}
