package crdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/cockroachdb/cockroach-go/v2/crdb"
	"github.com/cockroachdb/cockroach-go/v2/crdb/crdbpgxv5"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookverify/hookverify/storage"
)

// Retry limits. A conflict costs one round of work and ends quickly, so it gets several
// attempts; an unreachable database gets few, because the caller is waiting and had better
// learn soon that the database is down.
const (
	maxAttempts            = 10
	maxUnavailableAttempts = 3
	backoffBase            = 5 * time.Millisecond
	backoffMax             = 250 * time.Millisecond
)

// txOptions says how to run one transaction.
type txOptions struct {
	isolation pgx.TxIsoLevel
	// idempotent marks work that may run again after a commit of unknown outcome, because a
	// second run recognises the first one's commit (Claim does, through its inbox id).
	idempotent bool
}

// phase is where an attempt failed, which decides whether it may be retried.
type phase int

const (
	phaseWork   phase = iota // acquiring, beginning or running statements: nothing committed
	phaseCommit              // the commit was sent: it may or may not have happened
)

// inTx runs fn in a transaction and commits it, retrying conflicts and lost connections. On
// CockroachDB it uses cockroach-go's ExecuteTx, whose RELEASE SAVEPOINT commits and retries
// in place. On PostgreSQL ExecuteTx cannot be used: there RELEASE does not commit, the COMMIT
// after it is ignored, so a failed commit would look like success; and a serialization
// failure poisons the whole transaction, so retrying from a savepoint never succeeds. There
// each attempt is a new transaction and every commit error is reported.
func (s *Store) inTx(ctx context.Context, op string, opts txOptions, fn func(ctx context.Context, tx pgx.Tx) error) error {
	txOpts := pgx.TxOptions{IsoLevel: opts.isolation}
	return s.retry(ctx, op, opts.idempotent, func(conn *pgx.Conn) (phase, error) {
		if s.engine == EngineCockroachDB {
			// ExecuteTx retries serialization failures in place; bound it like our own loop.
			ctx := crdb.WithMaxRetries(ctx, maxAttempts)
			err := crdbpgx.ExecuteTx(ctx, conn, txOpts, func(tx pgx.Tx) error { return fn(ctx, tx) })
			var ambiguous *crdb.AmbiguousCommitError
			if errors.As(err, &ambiguous) {
				return phaseCommit, err
			}
			return phaseWork, err
		}
		tx, err := conn.BeginTx(ctx, txOpts)
		if err != nil {
			return phaseWork, err
		}
		if err := fn(ctx, tx); err != nil {
			_ = tx.Rollback(ctx)
			return phaseWork, err
		}
		if err := tx.Commit(ctx); err != nil {
			if pgconn.SafeToRetry(err) {
				// The COMMIT never left: the server rolls back when the connection goes.
				return phaseWork, err
			}
			return phaseCommit, err
		}
		return phaseWork, nil
	})
}

// inOneTrip runs fn's statements on PostgreSQL as one implicit transaction: one statement
// outside an explicit transaction, or several sent together with one Sync (pgx's SendBatch),
// commit when they end, so they cost one round trip and no BEGIN or COMMIT of their own. If
// the connection fails once they were sent, before the answer, they may or may not have
// committed, as after a COMMIT whose outcome is unknown: only idempotent work runs again.
// Not for CockroachDB, whose retries need inTx.
func (s *Store) inOneTrip(ctx context.Context, op string, idempotent bool, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	return s.retry(ctx, op, idempotent, func(conn *pgx.Conn) (phase, error) {
		err := fn(ctx, conn)
		if err != nil && conn.IsClosed() && !pgconn.SafeToRetry(err) {
			// Sent, and no answer.
			return phaseCommit, err
		}
		// Answered, with an error or not: an error rolled the implicit transaction back.
		return phaseWork, err
	})
}

// single runs one statement outside an explicit transaction; a single statement is atomic on
// both engines and needs no commit of ours. Lost connections are retried like in inTx.
func (s *Store) single(ctx context.Context, op string, fn func(ctx context.Context, conn *pgx.Conn) error) error {
	return s.retry(ctx, op, false, func(conn *pgx.Conn) (phase, error) {
		return phaseWork, fn(ctx, conn)
	})
}

// failure describes a failed attempt.
type failure struct {
	err   error
	phase phase
	// connLost is set when the attempt could not connect or its connection broke: the
	// database or the network failed, not the request.
	connLost bool
}

// retry runs attempt on a pooled connection until it succeeds or fails for good, and maps the
// final error to the storage sentinels.
func (s *Store) retry(ctx context.Context, op string, idempotent bool, attempt func(conn *pgx.Conn) (phase, error)) error {
	if s.closed.Load() {
		return fmt.Errorf("crdb: %s: %w", op, storage.ErrClosed)
	}
	unavailable := 0
	for n := 1; ; n++ {
		f := s.attemptOnce(ctx, attempt)
		if f.err == nil {
			return nil
		}
		retry, final := s.judge(ctx, op, idempotent, f)
		if !retry {
			return final
		}
		if isRetryableConflict(f.err) {
			if n >= maxAttempts {
				return final
			}
		} else if unavailable++; unavailable >= maxUnavailableAttempts || n >= maxAttempts {
			return final
		}
		if err := sleep(ctx, backoff(n)); err != nil {
			return fmt.Errorf("crdb: %s: %w: %w (after %w)", op, storage.ErrUnavailable, err, final)
		}
	}
}

func (s *Store) attemptOnce(ctx context.Context, attempt func(conn *pgx.Conn) (phase, error)) failure {
	conn, err := s.pool.acquire(ctx)
	if err != nil {
		return failure{err: err, phase: phaseWork, connLost: !errors.Is(err, errPoolClosed)}
	}
	defer s.pool.release(conn)
	ph, err := attempt(conn.Conn())
	lost := err != nil && conn.Conn().IsClosed()
	if lost {
		// Most often the server restarted (SQLSTATE 57P01 on every connection) or the network
		// dropped: the idle connections are likely dead too. Drop them all now, so the retry
		// dials afresh instead of trying them one by one; a needless reset only costs a dial.
		s.pool.Reset()
	}
	return failure{err: err, phase: ph, connLost: lost}
}

// judge decides whether a failed attempt may run again, and returns the error to report if
// not (or if the attempts run out).
func (s *Store) judge(ctx context.Context, op string, idempotent bool, f failure) (retry bool, final error) {
	err := f.err
	switch {
	case s.closed.Load() || errors.Is(err, errPoolClosed):
		return false, fmt.Errorf("crdb: %s: %w", op, storage.ErrClosed)
	case isSentinel(err):
		// The work itself decided the outcome (a row not found, say).
		return false, mapError(op, err)
	case ctx.Err() != nil:
		return false, fmt.Errorf("crdb: %s: %w: %w", op, storage.ErrUnavailable, err)
	case isRetryableConflict(err):
		// The server rolled the transaction back, at commit or before: nothing happened.
		return true, fmt.Errorf("crdb: %s: %w: gave up after conflicts: %w", op, storage.ErrUnavailable, err)
	case f.phase == phaseCommit:
		if !f.connLost && !commitOutcomeUnknown(err) {
			// The server answered the commit with an error: it rolled back.
			return false, fmt.Errorf("crdb: %s: %w: commit failed: %w", op, storage.ErrUnavailable, err)
		}
		return idempotent, fmt.Errorf("crdb: %s: %w: commit outcome unknown: %w", op, storage.ErrUnavailable, err)
	case f.connLost || isUnavailable(err):
		// Nothing was committed, so running again is safe for any work.
		return true, fmt.Errorf("crdb: %s: %w: %w", op, storage.ErrUnavailable, err)
	default:
		return false, mapError(op, err)
	}
}

// commitOutcomeUnknown reports a commit error after which the transaction may have
// committed: CockroachDB said it cannot tell, or the connection failed.
func commitOutcomeUnknown(err error) bool {
	code := sqlState(err)
	return code == codeStatementCompletionUnknown || strings.HasPrefix(code, "08")
}

// backoff returns a jittered, exponentially growing pause before attempt n+1, so that
// transactions that conflicted do not meet again at once.
func backoff(n int) time.Duration {
	d := backoffBase << min(n-1, 10)
	d = min(d, backoffMax)
	return d/2 + rand.N(d/2+1)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// queryOne runs a single-row read and scans it with scan; no row is ErrNotFound.
func queryOne[T any](ctx context.Context, s *Store, op string, scan pgx.RowToFunc[T], sql string, args ...any) (T, error) {
	var out T
	err := s.single(ctx, op, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectExactlyOneRow(rows, scan)
		if errors.Is(err, pgx.ErrNoRows) {
			return storage.ErrNotFound
		}
		return err
	})
	return out, err
}

// queryAll runs a read and scans every row with scan. Callers sort the result themselves
// where order matters, by bytes, since ORDER BY follows the database's collation.
func queryAll[T any](ctx context.Context, s *Store, op string, scan pgx.RowToFunc[T], sql string, args ...any) ([]T, error) {
	var out []T
	err := s.single(ctx, op, func(ctx context.Context, conn *pgx.Conn) error {
		rows, err := conn.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scan)
		return err
	})
	return out, err
}
