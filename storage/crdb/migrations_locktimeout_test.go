package crdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/internal/pgtest"
)

// TestMigrationBehindALongTransactionLetsIntakeThrough: a migration step that needs a table
// lock (ALTER TABLE, CREATE INDEX) and finds a long transaction holding a lock on the table
// (a report, a pg_dump) waits for it; PostgreSQL queues every later lock on the table behind
// the waiting step, so without a bound on that wait each claim and read of the inbox waited
// with it, for as long as the long transaction ran. The migration must give way instead (a
// short lock_timeout, tried again after a pause), and apply once the transaction ends.
func TestMigrationBehindALongTransactionLetsIntakeThrough(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, admin, holder, migrated := migrateBehindALongTransaction(t)

	// Intake and reads go on meanwhile.
	for i, id := range []string{"in-1", "in-2", "in-3"} {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		r, err := s.Claim(cctx, delivery("evt-"+id, id))
		cancel()
		if err != nil || !r.Accepted {
			t.Fatalf("claim %d while the migration waits for the long transaction: %+v, %v (stalled behind the migration's lock)", i, r, err)
		}
		cctx, cancel = context.WithTimeout(ctx, 5*time.Second)
		_, err = s.GetDelivery(cctx, id)
		cancel()
		if err != nil {
			t.Fatalf("read %d while the migration waits for the long transaction: %v", i, err)
		}
	}
	select {
	case err := <-migrated:
		t.Fatalf("Migrate returned while the long transaction held its lock: %v", err)
	default:
	}

	// The long transaction ends: the migration applies.
	exec(t, holder, `COMMIT`)
	select {
	case err := <-migrated:
		if err != nil {
			t.Fatalf("Migrate after the long transaction ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Migrate did not finish after the long transaction ended")
	}
	wantAllMigrations(t, admin, EnginePostgreSQL)
}

// TestMigrationBehindALongTransactionEndsWithItsContext: giving way, the migration still
// stops when its caller gives up.
func TestMigrationBehindALongTransactionEndsWithItsContext(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	admin := connect(t, url)
	exec(t, admin, `DELETE FROM schema_migrations WHERE version = 7`)
	holder := connect(t, url)
	exec(t, holder, `BEGIN`)
	exec(t, holder, `SELECT count(*) FROM inbox`)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	if err := s.Migrate(ctx); err == nil {
		t.Fatal("Migrate succeeded while a transaction held the inbox")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Migrate took %v to see its context end", took)
	}
	exec(t, holder, `ROLLBACK`)
}

// migrateBehindALongTransaction opens a store on a new database with one claim in it, makes
// step 7 (ALTER TABLE inbox ...) pending again, as after an upgrade, starts a long transaction
// reading the inbox (holder), then Migrate in the background (its answer on migrated), and
// returns once the migration's step waits for the inbox's lock.
func migrateBehindALongTransaction(t *testing.T) (s *Store, admin, holder *pgx.Conn, migrated chan error) {
	t.Helper()
	url := pgtest.Shared(t).NewDatabase(t)
	ctx := t.Context()
	s, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	mustClaim(t, s, delivery("evt-0", "in-0"), true)

	admin = connect(t, url)
	exec(t, admin, `DELETE FROM schema_migrations WHERE version = 7`)
	holder = connect(t, url)
	exec(t, holder, `BEGIN`)
	exec(t, holder, `SELECT count(*) FROM inbox`)

	migrated = make(chan error, 1)
	go func() { migrated <- s.Migrate(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE relation = 'inbox'::regclass AND NOT granted)`).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting {
			return s, admin, holder, migrated
		}
		if time.Now().After(deadline) {
			t.Fatal("the migration never waited for the inbox's lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
