package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// Pragmas reports the settings of one writer and one reader connection, keyed "pool.pragma".
func Pragmas(ctx context.Context, s *Store) map[string]string {
	out := map[string]string{}
	for pool, db := range map[string]*sql.DB{"writer": s.writer, "reader": s.reader} {
		conn, err := db.Conn(ctx)
		if err != nil {
			out[pool+".error"] = err.Error()
			continue
		}
		for _, name := range []string{"journal_mode", "synchronous", "foreign_keys", "busy_timeout", "query_only", "page_size"} {
			var v any
			if err := conn.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
				out[pool+"."+name] = "error: " + err.Error()
				continue
			}
			out[pool+"."+name] = fmt.Sprint(v)
		}
		_ = conn.Close()
	}
	return out
}

// MigrationSteps is how many schema steps a fully migrated database has recorded.
var MigrationSteps = len(migrations) - 1

// CreateSchemaAt builds the schema of the given version in an empty database, as Migrate of
// that release would have left it.
func CreateSchemaAt(ctx context.Context, db *sql.DB, version int) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		applied_at INTEGER NOT NULL
	) STRICT`); err != nil {
		return err
	}
	for v := 1; v <= version; v++ {
		if _, err := db.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("step %d: %w", v, err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, v); err != nil {
			return err
		}
	}
	return nil
}

// LeaseBatches is how many write transactions Lease has committed; LeasesWaiting how many
// leases wait for theirs.
func LeaseBatches(s *Store) int64 { return s.leases.Batches() }
func LeasesWaiting(s *Store) int  { return s.leases.Waiting() }

// AckBatches is how many write transactions Ack has committed.
func AckBatches(s *Store) int64 { return s.acks.Batches() }

// AcksWaiting is how many acks wait for their outcome, queued or committing.
func AcksWaiting(s *Store) int { return s.acks.Waiting() }

// Prepared is Store.prepared; CachedStmts is how many statements its cache holds.
func Prepared(s *Store, ctx context.Context, text string) (*sql.Stmt, func(), error) {
	return s.prepared(ctx, text)
}

func CachedStmts(s *Store) int {
	s.writeStmts.mu.Lock()
	defer s.writeStmts.mu.Unlock()
	return len(s.writeStmts.byText)
}
