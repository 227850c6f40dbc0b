package crdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookverify/hookverify/storage"
)

// migration is one versioned schema step.
type migration struct {
	version     int64
	description string
	sql         string
}

// migrations build the schema on both engines, in order. Rules for adding one:
//   - append only; never edit or renumber a step that may have run somewhere;
//   - exactly one DDL statement per step, because CockroachDB runs schema changes as jobs and
//     handles them badly when batched with other statements;
//   - every step idempotent (IF NOT EXISTS), because on CockroachDB two processes may run
//     the same step at the same time (see Migrate);
//   - portable SQL: BIGINT not INT (INT is 64-bit on CockroachDB, 32-bit on PostgreSQL),
//     TEXT, BYTEA, BOOLEAN, TIMESTAMPTZ, JSONB, no SERIAL, indexes as their own statements.
var migrations = []migration{
	{1, "create endpoints", `CREATE TABLE IF NOT EXISTS endpoints (
	id TEXT PRIMARY KEY,
	provider TEXT NOT NULL,
	timestamp_tolerance_ms BIGINT NOT NULL,
	max_body_bytes BIGINT NOT NULL,
	dedupe_scope TEXT NOT NULL,
	disabled BOOLEAN NOT NULL,
	options JSONB,
	created_at TIMESTAMPTZ,
	updated_at TIMESTAMPTZ
)`},
	{2, "create secrets", `CREATE TABLE IF NOT EXISTS secrets (
	id TEXT PRIMARY KEY,
	endpoint_id TEXT NOT NULL REFERENCES endpoints (id),
	key_id TEXT NOT NULL,
	sealed BYTEA NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	not_before TIMESTAMPTZ,
	not_after TIMESTAMPTZ,
	retired_at TIMESTAMPTZ,
	last_used_at TIMESTAMPTZ
)`},
	{3, "index secrets by endpoint",
		`CREATE INDEX IF NOT EXISTS secrets_endpoint_id_idx ON secrets (endpoint_id)`},
	// inbox_id is TEXT, not UUID: the contract only asks callers for a unique string, and the
	// conformance suite uses ids that are not UUIDs.
	{4, "create claims", `CREATE TABLE IF NOT EXISTS claims (
	scope TEXT NOT NULL,
	event_id TEXT NOT NULL,
	inbox_id TEXT NOT NULL,
	operation_key TEXT NOT NULL,
	first_received_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (scope, event_id)
)`},
	{5, "create inbox", `CREATE TABLE IF NOT EXISTS inbox (
	id TEXT PRIMARY KEY,
	scope TEXT NOT NULL,
	event_id TEXT NOT NULL,
	endpoint_id TEXT NOT NULL,
	operation_key TEXT NOT NULL,
	secret_id TEXT NOT NULL,
	method TEXT NOT NULL,
	url TEXT NOT NULL,
	headers BYTEA NOT NULL,
	body BYTEA NOT NULL,
	received_at TIMESTAMPTZ NOT NULL
)`},
	// Counts per scope use its prefix; uniqueness backs up the claim's primary key, so an
	// identity can never have two inbox records. (Step 28 drops it: see there.)
	{6, "index inbox by identity",
		`CREATE UNIQUE INDEX IF NOT EXISTS inbox_scope_event_id_key ON inbox (scope, event_id)`},
	// The inbox's delivery state (storage.InboxStore). Existing rows become pending deliveries
	// visible since they were received: visible_at gets a constant default, so that adding the
	// column is cheap and a binary that predates it can still insert, and step 10 then sets it.
	{7, "inbox state", `ALTER TABLE inbox ADD COLUMN IF NOT EXISTS state TEXT NOT NULL DEFAULT 'pending'`},
	{8, "inbox attempts", `ALTER TABLE inbox ADD COLUMN IF NOT EXISTS attempts BIGINT NOT NULL DEFAULT 0`},
	{9, "inbox visible_at",
		`ALTER TABLE inbox ADD COLUMN IF NOT EXISTS visible_at TIMESTAMPTZ NOT NULL DEFAULT '1970-01-01 00:00:00+00'`},
	{10, "inbox visible_at of existing rows",
		`UPDATE inbox SET visible_at = received_at WHERE visible_at = '1970-01-01 00:00:00+00'`},
	{11, "inbox lease_token", `ALTER TABLE inbox ADD COLUMN IF NOT EXISTS lease_token TEXT`},
	{12, "inbox leased_until", `ALTER TABLE inbox ADD COLUMN IF NOT EXISTS leased_until TIMESTAMPTZ`},
	{13, "inbox acked_at", `ALTER TABLE inbox ADD COLUMN IF NOT EXISTS acked_at TIMESTAMPTZ`},
	{14, "inbox dead_at", `ALTER TABLE inbox ADD COLUMN IF NOT EXISTS dead_at TIMESTAMPTZ`},
	{15, "inbox last_error", `ALTER TABLE inbox ADD COLUMN IF NOT EXISTS last_error TEXT`},
	// Lease scans pending rows by visible_at and expired leases by state; ListDeadLetters reads
	// dead rows in the same order; Sweep finds acked rows by state.
	{16, "index inbox by state",
		`CREATE INDEX IF NOT EXISTS inbox_state_visible_at_idx ON inbox (state, visible_at, id)`},
	{17, "index inbox by endpoint and state",
		`CREATE INDEX IF NOT EXISTS inbox_endpoint_id_state_idx ON inbox (endpoint_id, state)`},
	{18, "index claims by age",
		`CREATE INDEX IF NOT EXISTS claims_first_received_at_idx ON claims (first_received_at)`},
	// Secret fingerprints (empty for secrets stored before them) and the audit trail.
	{19, "secrets fingerprint", `ALTER TABLE secrets ADD COLUMN IF NOT EXISTS fingerprint TEXT NOT NULL DEFAULT ''`},
	{20, "create audit_events", `CREATE TABLE IF NOT EXISTS audit_events (
	id TEXT PRIMARY KEY,
	at TIMESTAMPTZ NOT NULL,
	actor TEXT NOT NULL,
	action TEXT NOT NULL,
	endpoint_id TEXT NOT NULL,
	secret_id TEXT NOT NULL,
	detail TEXT NOT NULL
)`},
	{21, "index audit_events by time", `CREATE INDEX IF NOT EXISTS audit_events_at_idx ON audit_events (at, id)`},
	{22, "index audit_events by endpoint",
		`CREATE INDEX IF NOT EXISTS audit_events_endpoint_id_idx ON audit_events (endpoint_id, at, id)`},
	// Callers' API tokens (storage.TokenStore), hashed; the UNIQUE hash is the lookup index,
	// declared inline so that the step stays one statement.
	{23, "create tokens", `CREATE TABLE IF NOT EXISTS tokens (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	token_hash BYTEA NOT NULL UNIQUE,
	scopes TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	last_used_at TIMESTAMPTZ,
	revoked_at TIMESTAMPTZ
)`},
	// The inbox monitor (InboxStats) counts unfinished deliveries per endpoint and state: a
	// covering index lets it read the index instead of every row (an index-only scan once the
	// visibility map is current on PostgreSQL).
	{24, "index inbox for the monitor",
		`CREATE INDEX IF NOT EXISTS inbox_state_endpoint_id_visible_at_idx ON inbox (state, endpoint_id, visible_at)`},
	// A lease filtered by endpoint picks each endpoint's due deliveries in (visible_at, id)
	// order along this index (storage.InboxFilter.ByEndpoint); without id in the index
	// PostgreSQL sorted all of them to break ties. It serves the monitor too, so the index of
	// step 24 goes. (CockroachDB takes an index name without its table when no other table
	// has an index of that name, as its own logic tests do with DROP INDEX IF EXISTS.)
	{25, "index inbox for leases by endpoint",
		`CREATE INDEX IF NOT EXISTS inbox_state_endpoint_id_visible_at_id_idx ON inbox (state, endpoint_id, visible_at, id)`},
	{26, "drop the monitor's index, which step 25's covers", `DROP INDEX IF EXISTS inbox_state_endpoint_id_visible_at_idx`},
	// Every statement that picks deliveries by endpoint also names their state, so step 25's
	// index serves it and step 17's is only written: an entry on every insert, and another on
	// every lease and ack (they change state, an indexed column, so each is a new row
	// version with entries in every index). Without it, 16 workers draining a closed loop of
	// new events acked 4-18 % more a second, and intake rose 4-12 % (BENCHMARKS.md, eighth
	// session). TestEndpointStatementsUseTheEndpointIndex checks the plans.
	{27, "drop the (endpoint_id, state) index, which step 25's covers", `DROP INDEX IF EXISTS inbox_endpoint_id_state_idx`},
	// The claim's primary key is what makes an identity's first delivery the only one
	// accepted; inbox records were unique by identity as well, and that was wrong once a claim
	// is swept (its dedupe window over) while its acked record is kept longer
	// (--inbox-retention above --dedupe-window): the event, new again, could not be recorded
	// until the old record went, where the embedded store, which never had this index,
	// accepted it. The conformance suite checks both now ("a claim swept while its acked
	// delivery is kept"). It was also an entry written on every insert, lease and ack; counts
	// by scope (CountDeliveries, for tests and tools) scan instead. CockroachDB drops an index
	// made by CREATE UNIQUE INDEX without CASCADE, as PostgreSQL does.
	{28, "drop the inbox's unique (scope, event_id) index: claims keep identities unique", `DROP INDEX IF EXISTS inbox_scope_event_id_key`},
}

// cockroachOnlyMigrations apply only on CockroachDB, after every step of migrations, for
// features PostgreSQL lacks (a row-level TTL on inbox, for instance). The same rules hold.
// Their versions start at 1_000_000 so that they never collide with the common steps, whose
// numbering goes on independently. There are none yet.
var cockroachOnlyMigrations = []migration{}

// postgresOnlyMigrations apply only on PostgreSQL, after every step of migrations: tuning for
// which CockroachDB has no syntax. Their versions start at 2_000_000. Each may be one PL/pgSQL
// block (PostgreSQL runs the whole migration in one transaction, so the one-DDL-per-step rule
// of CockroachDB does not bind them), and must be idempotent and harmless where its feature is
// missing.
var postgresOnlyMigrations = []migration{
	// A 2 KiB body is past PostgreSQL's 2 KB threshold, so every insert compresses it, with pglz
	// by default: about 17 µs of PostgreSQL's CPU per delivery, a third of its work on the
	// claim (BENCHMARKS.md, thirteenth session). lz4 compresses such bodies as small for half
	// the CPU. It applies to rows written from then on; older ones stay readable as they are.
	// PostgreSQL before 14 has no SET COMPRESSION, and a build without lz4 refuses it: the
	// block then does nothing and bodies stay with pglz.
	{2_000_000, "compress inbox bodies with lz4", `DO $$
BEGIN
	EXECUTE 'ALTER TABLE inbox ALTER COLUMN body SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
	NULL;
END
$$`},
	// ListEndpointsPage orders and compares ids with COLLATE "C" (bytes), which the primary
	// key, in the database's collation, cannot serve: every page of a listing of tens of
	// thousands of endpoints read and sorted them all. CockroachDB's primary key is in that
	// order already.
	{2_000_001, "index endpoints by id bytes, the order of their pages", `DO $$
BEGIN
	CREATE INDEX IF NOT EXISTS endpoints_id_bytes_idx ON endpoints (id COLLATE "C");
END
$$`},
}

// createMigrationsTable records applied steps. It is not a step itself because the steps'
// bookkeeping needs it.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version BIGINT PRIMARY KEY,
	description TEXT NOT NULL,
	applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
)`

// migrationsTableExists asks whether schema_migrations is there before creating it: CREATE
// TABLE IF NOT EXISTS needs the CREATE privilege on the schema even when the table exists, and
// serve may run as a role that only reads and writes rows once `hookverify migrate` has run as
// the schema's owner.
const migrationsTableExists = `SELECT EXISTS (SELECT 1 FROM information_schema.tables
	WHERE table_schema = current_schema() AND table_name = 'schema_migrations')`

const recordMigration = `INSERT INTO schema_migrations (version, description) VALUES ($1, $2)
ON CONFLICT (version) DO NOTHING`

// migrationLockKey is the PostgreSQL advisory lock that serialises migrations of one
// database; the digits spell "hookveri" in ASCII.
const migrationLockKey int64 = 0x686f6f6b76657269

// Migrate applies every pending migration. It is idempotent and safe to run from several
// processes at once.
//
// On PostgreSQL the whole run is one transaction holding an advisory lock, so concurrent runs
// queue and each step is applied and recorded atomically. CockroachDB has no advisory locks
// and prefers schema changes outside explicit transactions, so there each step runs on its
// own and relies on idempotency: IF NOT EXISTS makes a repeated or concurrent step harmless
// and ON CONFLICT records its version once; the versions are read again before each pending
// step, so that a run never repeats a step another run recorded meanwhile (see
// migrateCockroachDB). A step interrupted before being recorded simply runs again next time.
func (s *Store) Migrate(ctx context.Context) error {
	steps := slices.Clone(migrations)
	if s.engine == EngineCockroachDB {
		steps = append(steps, cockroachOnlyMigrations...)
		return s.migrateCockroachDB(ctx, steps)
	}
	return s.migratePostgreSQL(ctx, append(steps, postgresOnlyMigrations...))
}

// migrationLockTimeout bounds how long a PostgreSQL migration statement waits for a table's
// lock (lock_timeout), and migrationLockPause how long the migration then waits before it
// tries again, at first; the pause doubles up to migrationLockPauseMax. A step that alters or
// indexes a table waits for the transactions using it to end, and PostgreSQL queues every
// later lock on the table behind the waiting step: unbounded, one long transaction (a report,
// a pg_dump) held up every claim, lease and read of the inbox for as long as it ran. Bounded,
// they wait this long at most, now and then, and the migration applies once the table is free.
const (
	migrationLockTimeout  = 200 * time.Millisecond
	migrationLockPause    = 500 * time.Millisecond
	migrationLockPauseMax = 10 * time.Second
)

// errMigrationLockBusy marks a migration attempt that gave way to a lock (lock_timeout); the
// storage sentinel keeps inTx from retrying it at once, as it would a lost connection.
var errMigrationLockBusy = fmt.Errorf("%w: a table the migration alters is in use (lock_timeout)", storage.ErrUnavailable)

// migrationWaitReport is how often, at most, a migration that waits (for a table in use, or
// for another instance's migration) says so in the log.
const migrationWaitReport = 5 * time.Second

func (s *Store) migratePostgreSQL(ctx context.Context, steps []migration) error {
	pause := migrationLockPause
	start := time.Now()
	var reported time.Time
	for {
		err := s.migratePostgreSQLOnce(ctx, steps)
		if !errors.Is(err, errMigrationLockBusy) {
			if !reported.IsZero() && err == nil {
				s.log.Info("migration applied after waiting for a table in use", "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return err
		}
		wait := pause/2 + rand.N(pause/2+1)
		if reported.IsZero() || time.Since(reported) >= migrationWaitReport {
			reported = time.Now()
			s.log.Warn("migration waits: a table it alters is in use by another transaction (a long report or pg_dump?); it gives way, so intake goes on, and tries again",
				"waited", time.Since(start).Round(time.Millisecond).String(), "retry_in", wait.Round(time.Millisecond).String())
		}
		if err := sleep(ctx, wait); err != nil {
			return fmt.Errorf("crdb: migrate: %w: %w (waiting for a table in use: %w)", storage.ErrUnavailable, err, errMigrationLockBusy)
		}
		pause = min(2*pause, migrationLockPauseMax)
	}
}

func (s *Store) migratePostgreSQLOnce(ctx context.Context, steps []migration) error {
	// READ COMMITTED so that each statement, run after the lock is granted, sees what the
	// previous holder committed; a snapshot taken before the wait would not.
	opts := txOptions{isolation: pgx.ReadCommitted, idempotent: true}
	return s.inTx(ctx, "migrate", opts, func(ctx context.Context, tx pgx.Tx) error {
		// The advisory lock is waited for without a bound: another instance migrating. A
		// wait that lasts is reported, so that a start held up by it is not silent.
		report := time.AfterFunc(migrationWaitReport, func() {
			s.log.Warn("migration waits for another process's migration of this database (PostgreSQL advisory lock)", "waited", migrationWaitReport.String())
		})
		_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", migrationLockKey)
		report.Stop()
		if err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf("SET LOCAL lock_timeout = %d", migrationLockTimeout.Milliseconds())); err != nil {
			return fmt.Errorf("set lock_timeout: %w", err)
		}
		err = s.migrateInTx(ctx, tx, steps)
		if sqlState(err) == codeLockNotAvailable {
			return fmt.Errorf("%w: %w", errMigrationLockBusy, err)
		}
		return err
	})
}

// migrateInTx is the work of one PostgreSQL migration transaction, under its advisory lock.
func (s *Store) migrateInTx(ctx context.Context, tx pgx.Tx, steps []migration) error {
	if err := ensureMigrationsTable(ctx, tx); err != nil {
		return err
	}
	if err := retireInboxCountTriggers(ctx, tx); err != nil {
		return err
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	if err := refuseNewerSchema(applied); err != nil {
		return err
	}
	for _, m := range steps {
		if applied[m.version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("migration %d (%s): %w", m.version, m.description, err)
		}
		if _, err := tx.Exec(ctx, recordMigration, m.version, m.description); err != nil {
			return fmt.Errorf("record migration %d: %w", m.version, err)
		}
	}
	return nil
}

func (s *Store) migrateCockroachDB(ctx context.Context, steps []migration) error {
	exec := func(what, sql string, args ...any) error {
		return s.single(ctx, "migrate: "+what, func(ctx context.Context, conn *pgx.Conn) error {
			_, err := conn.Exec(ctx, sql, args...)
			return err
		})
	}
	err := s.single(ctx, "migrate: create schema_migrations", func(ctx context.Context, conn *pgx.Conn) error {
		return ensureMigrationsTable(ctx, conn)
	})
	if err != nil {
		return err
	}
	var applied map[int64]bool
	readApplied := func() error {
		err := s.single(ctx, "migrate: read versions", func(ctx context.Context, conn *pgx.Conn) (err error) {
			applied, err = appliedVersions(ctx, conn)
			return err
		})
		if err != nil {
			return err
		}
		if err := refuseNewerSchema(applied); err != nil {
			return fmt.Errorf("crdb: migrate: %w", err)
		}
		return nil
	}
	if err := readApplied(); err != nil {
		return err
	}
	for _, m := range steps {
		if applied[m.version] {
			continue
		}
		// Another instance may have migrated since the versions were read (nothing serialises
		// the runs here), and a step run again after a later one (a step may undo an earlier
		// one: 26 drops 24's index, 28 drops 6's) would bring back what that later step
		// removed, for good if this process then stops before running the later step again.
		// So the versions are read again before each pending step, and one recorded since is
		// skipped. (The window left is one step's: runs that start together run each step
		// together, which IF NOT EXISTS makes harmless.)
		if err := readApplied(); err != nil {
			return err
		}
		if applied[m.version] {
			continue
		}
		if err := exec(fmt.Sprintf("migration %d (%s)", m.version, m.description), m.sql); err != nil {
			return err
		}
		if err := exec(fmt.Sprintf("record migration %d", m.version), recordMigration, m.version, m.description); err != nil {
			return err
		}
	}
	return nil
}

// retiredTriggerStep is the description with which d05543b recorded its PostgreSQL-only step
// 2_000_001. That build kept the inbox's counts by triggers (its steps 2_000_001-2_000_007);
// 8897d54 reverted it eleven minutes later, and f036391 gave 2_000_001 to another step. A
// database it migrated records those seven versions, so every release since 30eabe9 refused
// it as migrated by a newer release, and no release would run on it; and it holds the
// triggers, which write a row into inbox_count_deltas at every statement that changes the
// inbox, for nothing (no release reads it) and about 10 % of the intake (BENCHMARKS.md).
const retiredTriggerStep = "create inbox_counts: unfinished deliveries by endpoint, as last folded"

// retireInboxCountTriggersSQL undoes d05543b's steps and forgets their records, so that the
// steps numbered the same today run. One statement each; the simple protocol (no arguments)
// sends them together, in the migration's transaction.
const retireInboxCountTriggersSQL = `DROP TRIGGER IF EXISTS inbox_count_insert ON inbox;
DROP TRIGGER IF EXISTS inbox_count_update ON inbox;
DROP TRIGGER IF EXISTS inbox_count_delete ON inbox;
DROP FUNCTION IF EXISTS hookverify_inbox_count_change();
DROP TABLE IF EXISTS inbox_count_deltas;
DROP TABLE IF EXISTS inbox_counts;
DELETE FROM schema_migrations WHERE version BETWEEN 2000001 AND 2000007`

// retireInboxCountTriggers removes what d05543b's reverted steps made, where that build
// migrated the database (see retiredTriggerStep); PostgreSQL only, in the migration's
// transaction under its lock.
func retireInboxCountTriggers(ctx context.Context, tx pgx.Tx) error {
	var found bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = 2000001 AND description = $1)`,
		retiredTriggerStep).Scan(&found)
	if err != nil {
		return fmt.Errorf("look for the reverted inbox count steps: %w", err)
	}
	if !found {
		return nil
	}
	if _, err := tx.Exec(ctx, retireInboxCountTriggersSQL); err != nil {
		return fmt.Errorf("drop the reverted inbox count triggers: %w", err)
	}
	return nil
}

// querier is what pgx.Conn and pgx.Tx have in common.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// ensureMigrationsTable creates schema_migrations unless it exists (see migrationsTableExists).
func ensureMigrationsTable(ctx context.Context, q querier) error {
	var exists bool
	if err := q.QueryRow(ctx, migrationsTableExists).Scan(&exists); err != nil {
		return fmt.Errorf("look for schema_migrations: %w", err)
	}
	if exists {
		return nil
	}
	if _, err := q.Exec(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	return nil
}

// refuseNewerSchema fails when the database records a step that no list of this release
// holds: a newer release migrated it (a rollback to this binary, or an old instance restarted
// during a rolling deploy). This code does not know what that step changed, and would run on
// a schema it was not written for, so it refuses; ErrInvalid, because no retry mends it and
// serve then stops with this error rather than wait for ever. The lists of both engines
// count as known, so that an engine's own steps are never taken for a newer release's.
func refuseNewerSchema(applied map[int64]bool) error {
	known := make(map[int64]bool)
	for _, list := range [][]migration{migrations, cockroachOnlyMigrations, postgresOnlyMigrations} {
		for _, m := range list {
			known[m.version] = true
		}
	}
	var unknown []int64
	for v := range applied {
		if !known[v] {
			unknown = append(unknown, v)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	return fmt.Errorf("%w: the database holds migrations %v, which this release does not know: a newer release of hookverify migrated it; run that release or a later one", storage.ErrInvalid, unknown)
}

func appliedVersions(ctx context.Context, q querier) (map[int64]bool, error) {
	rows, err := q.Query(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := make(map[int64]bool, len(versions))
	for _, v := range versions {
		applied[v] = true
	}
	return applied, nil
}
