package crdb

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/internal/pgtest"
)

// sqlRecorder is a pgx tracer that keeps the text of every statement sent.
type sqlRecorder struct {
	mu  sync.Mutex
	sql map[string]bool
}

func (r *sqlRecorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	r.sql[data.SQL] = true
	r.mu.Unlock()
	return ctx
}

func (r *sqlRecorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (r *sqlRecorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *sqlRecorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	r.mu.Lock()
	r.sql[data.SQL] = true
	r.mu.Unlock()
}

func (r *sqlRecorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestMigrationInterruptedAfterEveryStep: a process killed after a step ran and before
// its version was recorded (the CockroachDB path, where each is its own statement) leaves the
// step applied and unrecorded; the next run must run it again without failing, and record it.
// Every step, on the schema it actually meets then.
func TestMigrationInterruptedAfterEveryStep(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := cockroachPathStore(t, url)
	conn := connect(t, url)
	steps := slices.Clone(migrations)
	steps = append(steps, cockroachOnlyMigrations...)
	for k := range steps {
		// A row in the inbox, so that the data step (10) meets data.
		if k == 6 {
			exec(t, conn, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id,
					method, url, headers, body, received_at) VALUES ('in-1', 's', 'e', 'ep', 'op', 'sec',
				'POST', 'https://x/', '\x00', '\x00', now())`)
		}
		// Step k ran, its record did not.
		exec(t, conn, steps[k].sql)
		if err := s.migrateCockroachDB(t.Context(), steps[:k+1]); err != nil {
			t.Fatalf("rerun after step %d (%s) was interrupted: %v", steps[k].version, steps[k].description, err)
		}
	}
	wantAllMigrations(t, conn, EngineCockroachDB)
	// And the PostgreSQL path, for its own steps.
	open(t, url)
	wantAllMigrations(t, conn, EnginePostgreSQL)
}

type hookSQLKey struct{}

// hookTracer calls its hooks after each statement on the connections it traces.
type hookTracer struct {
	end func(sql string)
}

func (h hookTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, hookSQLKey{}, data.SQL)
}

func (h hookTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if sql, ok := ctx.Value(hookSQLKey{}).(string); ok {
		h.end(sql)
	}
}

// TestCockroachPathStaleRunUndoesNoLaterStep: on CockroachDB there is no lock, and two
// instances starting together each read the applied versions once. One that read them before
// the other ran every step then runs every step again, in order: step 6 makes the inbox's
// unique (scope, event_id) index again after step 28 dropped it, and step 24 the monitor's
// index after step 26. Killed before it reaches 28 (a liveness probe, a deploy), it leaves
// the index that step 28 removed, with 28 recorded, so no run ever drops it again: an event
// whose claim was swept while its acked record is kept can no longer be recorded.
func TestCockroachPathStaleRunUndoesNoLaterStep(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	a := cockroachPathStore(t, url)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var once sync.Once
	config, err := newPoolConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	config.MaxConns = 2
	config.ConnConfig.Tracer = hookTracer{end: func(sql string) {
		switch sql {
		case "SELECT version FROM schema_migrations":
			// B has read the versions (none): A starts now and migrates all the way.
			once.Do(func() {
				if err := a.Migrate(context.Background()); err != nil {
					t.Errorf("A: Migrate: %v", err)
				}
			})
		case migrations[5].sql:
			// B is killed after running step 6 again.
			cancel()
		}
	}}
	p, err := newPool(t.Context(), config)
	if err != nil {
		t.Fatal(err)
	}
	b := &Store{pool: p, engine: EngineCockroachDB}
	t.Cleanup(func() { _ = b.Close() })
	_ = b.Migrate(ctx) // killed or done

	conn := connect(t, url)
	wantAllMigrations(t, conn, EngineCockroachDB)
	for _, index := range []string{"inbox_scope_event_id_key", "inbox_state_endpoint_id_visible_at_idx", "inbox_endpoint_id_state_idx"} {
		var exists bool
		if err := conn.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", index).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists {
			t.Errorf("index %s, which a recorded step dropped, was made again by a run that read the versions before", index)
		}
	}
}

// TestPostgreSQLMigrationKilledMidwayRollsBack: on PostgreSQL the run is one transaction,
// so a run cut off after some steps leaves nothing of them (the README's "an interrupted
// migration rolls back"), and the next run applies every step.
func TestPostgreSQLMigrationKilledMidwayRollsBack(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	config, err := newPoolConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	config.MaxConns = 2
	config.ConnConfig.Tracer = hookTracer{end: func(sql string) {
		if sql == migrations[11].sql {
			cancel() // killed after step 12 ran
		}
	}}
	p, err := newPool(t.Context(), config)
	if err != nil {
		t.Fatal(err)
	}
	s := &Store{pool: p, engine: EnginePostgreSQL}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.Migrate(ctx); err == nil {
		t.Fatal("Migrate cut off after step 12 succeeded")
	}
	conn := connect(t, url)
	var tables int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_name IN ('schema_migrations', 'endpoints', 'inbox')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d tables left by a run cut off midway, want none (rolled back)", tables)
	}
	open(t, url)
	wantAllMigrations(t, conn, EnginePostgreSQL)
}
