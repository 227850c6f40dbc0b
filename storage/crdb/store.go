// Package crdb is the CockroachDB storage backend. It speaks the PostgreSQL wire protocol,
// uses only SQL both engines accept, and runs against PostgreSQL 15 as well; its tests do.
//
// It needs CockroachDB v23.1 or later (SELECT ... FOR UPDATE SKIP LOCKED, which the inbox's
// Lease uses so that concurrent workers pass each other's rows by, came in v22.2; no release
// before v23.1 was considered). No CockroachDB is run by the tests: see RELIABILITY.md.
package crdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookverify/hookverify/storage"
)

// Engine is the database server a Store talks to.
type Engine string

// The engines the store knows. They differ in how transactions are retried and migrations
// are serialised.
const (
	EnginePostgreSQL  Engine = "PostgreSQL"
	EngineCockroachDB Engine = "CockroachDB"
)

// Store is a storage.Store on CockroachDB or PostgreSQL. It is safe for concurrent use.
type Store struct {
	pool   *pool
	engine Engine
	closed atomic.Bool
	// claims are group-commit lanes: each lane commits one batch at a time, and the lanes
	// commit in parallel on their own connections. See claimLanes.
	claims [claimLanes]storage.ClaimBatcher
	// claimsMetHeld says that the last claim batch on PostgreSQL found an identity claimed
	// already, so the next one reads before it claims (see commitClaims).
	claimsMetHeld atomic.Bool
	// acks is group commit for Ack (see Ack).
	acks storage.Batcher[ackCall, struct{}]
	// leaseLanes bound the lease transactions running at once (SetLeaseConcurrency), one
	// per lane, each lane group-committing the leases that wait for it; none: no bound.
	leaseLanes []storage.Batcher[leaseCall, storage.LeaseResult]
	// log receives what an operator should hear of while a call waits (WithLogger).
	log *slog.Logger
}

// Option configures Open.
type Option func(*Store)

// WithLogger sends the store's reports to log: today, a migration that waits for a table
// another transaction holds, or for another instance's migration. Without it, such a wait,
// which holds up serve's start or migrate for as long as the other transaction runs, is
// silent.
func WithLogger(log *slog.Logger) Option {
	return func(s *Store) {
		if log != nil {
			s.log = log
		}
	}
}

// claimLanes is how many claim batches may commit at once on CockroachDB, where a commit is
// a consensus round whose latency parallel batches hide. PostgreSQL uses one lane: its commits
// wait for the same WAL flush, so parallel batches only made each batch smaller, and measured
// slower (scripts/bench.sh, BENCHMARKS.md).
const claimLanes = 4

var (
	_ storage.Store              = (*Store)(nil)
	_ storage.ClaimBatchReporter = (*Store)(nil)
	_ storage.InboxIDSource      = (*Store)(nil)
)

// DefaultLeaseConcurrency is how many lease transactions a store runs at once unless told
// otherwise (SetLeaseConcurrency); the leases that wait meanwhile share the next one. A lease
// is the drain's heaviest statement, and every one running is a database backend competing
// for CPU with the one claim batch that carries all new deliveries: with PostgreSQL on the
// same 2 cores and 16 workers draining, new events fell behind a 3,000/s schedule with leases
// unbounded and kept it with two at a time (BENCHMARKS.md, sixth session). Once waiting
// leases shared a transaction, one at a time did better than two: in a closed loop with 16
// workers draining, 3,690-4,866 new deliveries a second taken in and 3,230-3,920 drained,
// against 2,887-3,057 and 2,872-3,057 (BENCHMARKS.md, tenth session).
const DefaultLeaseConcurrency = 1

// defaultConnectTimeout bounds a connection attempt when the URL sets no connect_timeout.
const defaultConnectTimeout = 10 * time.Second

// Open connects to the database at databaseURL (a postgres:// URL or key=value string),
// detects the engine and applies every pending migration. The pgxpool pool opens at most
// pool_max_conns connections (10 unless the URL says otherwise).
func Open(ctx context.Context, databaseURL string, opts ...Option) (*Store, error) {
	config, err := newPoolConfig(databaseURL)
	if err != nil {
		// The parse error can quote the URL, password included; do not pass it on.
		return nil, fmt.Errorf("crdb: open: %w: cannot parse the database URL (not quoted here: it may hold a password): %s", storage.ErrInvalid, urlProblem(databaseURL))
	}
	p, err := newPool(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("crdb: open: %w: %w", storage.ErrUnavailable, err)
	}
	s := &Store{pool: p, log: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(s)
	}
	s.SetLeaseConcurrency(DefaultLeaseConcurrency)
	if err := s.detectEngine(ctx); err != nil {
		s.pool.close()
		return nil, refuseConfiguration(err)
	}
	if err := s.commitSynchronously(ctx, config.Copy()); err != nil {
		s.pool.close()
		return nil, refuseConfiguration(err)
	}
	if err := s.Migrate(ctx); err != nil {
		s.pool.close()
		return nil, refuseConfiguration(err)
	}
	return s, nil
}

// commitSynchronously makes the store's sessions commit with synchronous_commit = on on a
// PostgreSQL set to off (for the cluster, the database or the role), by opening the pool again
// with the setting in each session's startup. With it off a commit returns before its WAL
// reaches disk, and a crash loses transactions already committed: deliveries answered
// ACCEPTED, which their providers never send again. Only off is overridden: local,
// remote_write and remote_apply all flush locally first. A URL (or $PGOPTIONS) that sets
// synchronous_commit itself is the operator's choice, and kept. CockroachDB commits durably,
// by consensus, always.
//
// config is the store's pool configuration, a copy of its own to change.
func (s *Store) commitSynchronously(ctx context.Context, config *pgxpool.Config) error {
	if s.engine != EnginePostgreSQL {
		return nil
	}
	params := config.ConnConfig.RuntimeParams
	if _, set := params["synchronous_commit"]; set || strings.Contains(params["options"], "synchronous_commit") {
		return nil
	}
	// The server also says whether the connection set it (source "client": a parameter or
	// the options of the URL or $PGOPTIONS, in any spelling PostgreSQL accepts, a dash for an
	// underscore, any case), which reading the URL could only guess.
	var setting, source string
	err := s.single(ctx, "read synchronous_commit", func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT setting, source FROM pg_settings WHERE name = 'synchronous_commit'").Scan(&setting, &source)
	})
	if err != nil || setting != "off" || source == "client" {
		return err
	}
	params["synchronous_commit"] = "on"
	p, err := newPool(ctx, config)
	if err != nil {
		return fmt.Errorf("crdb: open: %w: %w", storage.ErrUnavailable, err)
	}
	// A connection pooler in between (PgBouncer) refuses a startup setting it does not know,
	// 08P01 on every connection, which would pass for an outage for ever; or, told to ignore
	// it, drops it, and the sessions commit with off after all. Only a session shows which.
	err = p.AcquireFunc(ctx, func(conn *pgxpool.Conn) error {
		return conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting)
	})
	if sqlState(err) == codeProtocolViolation || err == nil && setting == "off" {
		p.close()
		cause := err
		if cause == nil {
			cause = errors.New("the sessions opened with synchronous_commit on still have it off")
		}
		return fmt.Errorf("crdb: open: %w: the database has synchronous_commit off, so a crash could lose deliveries already answered ACCEPTED, "+
			"and hookverify's sessions cannot turn it on in their startup, which a connection pooler such as PgBouncer refuses or ignores: "+
			"set it on for hookverify's role (ALTER ROLE ... SET synchronous_commit = on) or database; or, to accept that loss, say so with synchronous_commit=off in the URL: %w",
			storage.ErrInvalid, &refusal{cause})
	}
	if err != nil {
		p.close()
		return fmt.Errorf("crdb: open: %w: %w", storage.ErrUnavailable, err)
	}
	s.pool.close()
	s.pool = p
	return nil
}

// SetLeaseConcurrency sets how many lease transactions run at once (DefaultLeaseConcurrency
// unless set), each carrying the leases that waited for it; zero or less: no bound, and every
// lease a transaction of its own. A database with cores to spare for the drain, or
// CockroachDB, where a lease waits on consensus rather than CPU, may want more. Call it before
// the store is used.
func (s *Store) SetLeaseConcurrency(n int) {
	s.leaseLanes = make([]storage.Batcher[leaseCall, storage.LeaseResult], max(n, 0))
	for i := range s.leaseLanes {
		s.leaseLanes[i].Limit = storage.MaxLeaseBatch
	}
}

// Engine reports which database server the store talks to.
func (s *Store) Engine() Engine {
	return s.engine
}

// bytesOrder is column as ORDER BY and comparisons must name it to follow its bytes: on
// PostgreSQL with COLLATE "C", since both follow the database's collation, which may order
// "B" after "a" and ignore punctuation. CockroachDB's STRING compares bytes already.
func (e Engine) bytesOrder(column string) string {
	if e == EnginePostgreSQL {
		return column + ` COLLATE "C"`
	}
	return column
}

func (s *Store) detectEngine(ctx context.Context) error {
	var version string
	err := s.single(ctx, "detect engine", func(ctx context.Context, conn *pgx.Conn) error {
		return conn.QueryRow(ctx, "SELECT version()").Scan(&version)
	})
	if err != nil {
		return err
	}
	s.engine = engineOf(version)
	return nil
}

// engineOf reads the engine from the text of SELECT version().
func engineOf(version string) Engine {
	if strings.HasPrefix(version, "CockroachDB") {
		return EngineCockroachDB
	}
	return EnginePostgreSQL
}

// Ping reports whether the database answers and takes writes (refuseReadOnly).
func (s *Store) Ping(ctx context.Context) error {
	return s.single(ctx, "ping", func(ctx context.Context, conn *pgx.Conn) error {
		return refuseReadOnly(ctx, conn)
	})
}

// refuseReadOnly returns ErrUnavailable when conn's session cannot write: a hot standby (a
// URL or DNS name that reached a replica, a primary demoted under a pooled connection), or
// default_transaction_read_only set (some managed services set it when the disk fills).
// Reads then pass while every claim fails with 25006, and health, which follows reads (Ping,
// InboxStats), said SERVING while no delivery could be accepted. Both engines: CockroachDB has
// the same session variables (default_transaction_read_only for a role or a database, and
// transaction_read_only, shown as on/off) and refuses writes alike. One connection is a
// sample of the pool, as every health read is.
func refuseReadOnly(ctx context.Context, conn *pgx.Conn) error {
	var readOnly string
	if err := conn.QueryRow(ctx, `SELECT current_setting('transaction_read_only')`).Scan(&readOnly); err != nil {
		return err
	}
	if readOnly == "on" {
		return fmt.Errorf("%w: the database is read-only (transaction_read_only is on: a standby, or default_transaction_read_only set for the role or the database), so it refuses every write; unset it, or point --database-url at the primary (target_session_attrs=read-write picks it among several hosts)", storage.ErrUnavailable)
	}
	return nil
}

// DatabaseTime returns the database's clock as it reads now: clock_timestamp() (the time of
// the reading, not of a transaction's start) plus half the statement's round trip, the time it
// took to come back. Instances sharing the database write times that others compare against
// their own (a lease's end above all: an instance whose clock is ahead would take over a lease
// still held, one behind would give leases already ended), so they must read one clock, this
// one; server.Options.DatabaseClock keeps a server's clock on it.
func (s *Store) DatabaseTime(ctx context.Context) (time.Time, error) {
	var at time.Time
	err := s.single(ctx, "read the database clock", func(ctx context.Context, conn *pgx.Conn) error {
		sent := time.Now()
		if err := conn.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at); err != nil {
			return err
		}
		at = at.Add(time.Since(sent) / 2)
		return nil
	})
	return at, err
}

// Close closes the store's connections. Later calls, Close included, return ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return fmt.Errorf("crdb: close: %w", storage.ErrClosed)
	}
	s.pool.close()
	return nil
}
