package crdb

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// TestInboxUpgradeKeepsDeliveriesLeasable migrates a database holding inbox records written
// before the delivery state existed (schema version 6): they become pending, visible since
// they were received.
func TestInboxUpgradeKeepsDeliveriesLeasable(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	conn := connect(t, url)
	exec(t, conn, createMigrationsTable)
	for _, m := range migrations {
		if m.version > 6 {
			break
		}
		exec(t, conn, m.sql)
		exec(t, conn, recordMigration, m.version, m.description)
	}
	old := delivery("evt-1", "inbox-1")
	exec(t, conn, `INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
		VALUES ($1, $2, $3, $4, $5)`, old.Scope, old.EventID, old.InboxID, old.OperationKey, old.ReceivedAt)
	exec(t, conn, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url,
		headers, body, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		old.InboxID, old.Scope, old.EventID, old.EndpointID, old.OperationKey, old.SecretID, old.Method, old.URL,
		storage.EncodeHeaders(old.Headers), old.Body, old.ReceivedAt)

	s := open(t, url)
	wantAllMigrations(t, conn, EnginePostgreSQL)
	stats, err := s.InboxStats(t.Context())
	if err != nil {
		t.Fatalf("InboxStats: %v", err)
	}
	if want := (storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: base}); len(stats) != 1 || stats[0] != want {
		t.Fatalf("InboxStats after the upgrade = %+v, want [%+v]", stats, want)
	}
	result, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 5, Visibility: time.Minute, MaxAttempts: 3,
		LeaseToken: "tok", Now: base})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	got := result.Deliveries
	if len(got) != 1 || got[0].InboxID != old.InboxID || got[0].Attempts != 1 || !got[0].VisibleAt.Equal(base) {
		t.Fatalf("Lease after the upgrade = %+v, want inbox-1 visible at %s, attempt 1", got, base)
	}
}

// TestInboxOnCockroachDBPaths runs the inbox through cockroach-go's ExecuteTx at SERIALIZABLE,
// the way it runs on CockroachDB, sequentially (see cockroachPathStore).
func TestInboxOnCockroachDBPaths(t *testing.T) {
	t.Parallel()
	s := cockroachPathInbox(t)
	now := base.Add(time.Minute)
	req := storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok-1", Now: now,
		InboxFilter: storage.InboxFilter{EndpointIDs: []string{"ep-1"}, Scopes: []string{"ep-1"}}}
	leased, err := leaseDeliveries(t, s, req)
	if err != nil || len(leased) != 1 || leased[0].InboxID != "inbox-1" {
		t.Fatalf("Lease = %+v, %v; want inbox-1", leased, err)
	}
	if _, err := s.ExtendLease(t.Context(), storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: "inbox-1", LeaseToken: "tok-1"},
		Visibility: time.Hour, Now: now}); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	if err := s.Ack(t.Context(), "inbox-1", "tok-1", now); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	if err := s.Ack(t.Context(), "inbox-1", "tok-1", now); !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("second Ack: %v, want ErrLeaseLost", err)
	}
	if err := s.Ack(t.Context(), "inbox-9", "tok-1", now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Ack of an unknown delivery: %v, want ErrNotFound", err)
	}

	req.LeaseToken = "tok-2"
	if leased, err = leaseDeliveries(t, s, req); err != nil || len(leased) != 1 || leased[0].InboxID != "inbox-2" {
		t.Fatalf("second Lease = %+v, %v; want inbox-2", leased, err)
	}
	if dead, err := s.Nack(t.Context(), "inbox-2", "tok-2", now, 1, "boom", now); err != nil || !dead {
		t.Fatalf("Nack = %v, %v; want dead", dead, err)
	}
	letters, _, err := s.ListDeadLetters(t.Context(), storage.InboxFilter{}, storage.DeadLetterKey{}, 10, 0)
	if err != nil || len(letters) != 1 || letters[0].LastError != "boom" {
		t.Fatalf("ListDeadLetters = %+v, %v; want inbox-2 with its error", letters, err)
	}
	if err := s.Requeue(t.Context(), "inbox-2", now); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	if err := s.Requeue(t.Context(), "inbox-2", now); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second Requeue: %v, want ErrNotFound", err)
	}
	// The requeued delivery's lease expires: the next lease takes it over and says so
	// (UPDATE ... FROM the locked CTE), and with no attempts left the one after dead-letters it.
	req.LeaseToken, req.MaxAttempts = "tok-3", 2
	if leased, err = leaseDeliveries(t, s, req); err != nil || len(leased) != 1 || leased[0].PreviousLeaseExpired {
		t.Fatalf("Lease after Requeue = %+v, %v; want inbox-2, no expired lease", leased, err)
	}
	expired := req
	expired.LeaseToken, expired.Now = "tok-4", now.Add(req.Visibility)
	if leased, err = leaseDeliveries(t, s, expired); err != nil || len(leased) != 1 || !leased[0].PreviousLeaseExpired {
		t.Fatalf("Lease after expiry = %+v, %v; want inbox-2 taken over from an expired lease", leased, err)
	}
	expired.LeaseToken, expired.Now = "tok-5", expired.Now.Add(req.Visibility)
	if result, err := s.Lease(t.Context(), expired); err != nil || result.ExpiredToDead != 1 || len(result.Deliveries) != 0 {
		t.Fatalf("Lease after the last attempt expired = %+v, %v; want one dead-lettered", result, err)
	}
	if err := s.Requeue(t.Context(), "inbox-2", now); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	stats, err := s.InboxStats(t.Context())
	if want := (storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: now}); err != nil ||
		len(stats) != 1 || stats[0] != want {
		t.Fatalf("InboxStats = %+v, %v; want [%+v]", stats, err, want)
	}
	res, err := s.Sweep(t.Context(), storage.SweepRequest{AckedBefore: now.Add(time.Second),
		ClaimsBefore: now, Batch: 10})
	if want := (storage.SweepResult{InboxDeleted: 1, ClaimsDeleted: 1}); err != nil || res != want {
		t.Fatalf("Sweep = %+v, %v; want %+v", res, err, want)
	}

	// A batch of acks, as concurrent acks share one (run here as one batch, sequentially).
	req.LeaseToken, req.MaxAttempts, req.Now = "tok-6", 5, now.Add(time.Hour)
	if leased, err = leaseDeliveries(t, s, req); err != nil || len(leased) != 1 || leased[0].InboxID != "inbox-2" {
		t.Fatalf("Lease before the batch = %+v, %v; want inbox-2", leased, err)
	}
	batch := []ackCall{{"inbox-2", "tok-x", req.Now}, {"inbox-2", "tok-6", req.Now}, {"inbox-9", "tok-6", req.Now},
		{"inbox-2", "tok-6", req.Now}}
	_, errs, err := s.commitAcks(batch)
	if err != nil {
		t.Fatalf("commitAcks: %v", err)
	}
	for i, want := range []error{storage.ErrLeaseLost, nil, storage.ErrNotFound, storage.ErrLeaseLost} {
		if (want == nil) != (errs[i] == nil) || !errors.Is(errs[i], want) {
			t.Errorf("ack %+v of the batch: %v, want %v", batch[i], errs[i], want)
		}
	}
	if stats, err := s.InboxStats(t.Context()); err != nil || len(stats) != 0 {
		t.Fatalf("InboxStats after the batch = %+v, %v; want nothing unfinished", stats, err)
	}
}

// cockroachPathInbox is a migratedCockroachPathStore on a new database holding endpoint ep-1
// and two deliveries claimed for it: inbox-1 received at base and inbox-2 a second later.
func cockroachPathInbox(t *testing.T) *Store {
	t.Helper()
	s := migratedCockroachPathStore(t, pgtest.Shared(t).NewDatabase(t))
	if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
	mustClaim(t, s, delivery("evt-1", "inbox-1"), true)
	second := delivery("evt-2", "inbox-2")
	second.ReceivedAt = base.Add(time.Second)
	mustClaim(t, s, second, true)
	return s
}

// TestImpossibleAcksOnCockroachDBPaths: on CockroachDB's path (one UPDATE for the batch's
// acks), an ack naming an id or token that holds NUL, which no stored row can, fails alone as
// one that matches nothing, and the acks beside it go through (storagetest checks the
// PostgreSQL path).
func TestImpossibleAcksOnCockroachDBPaths(t *testing.T) {
	t.Parallel()
	s := cockroachPathInbox(t)
	now := base.Add(time.Minute)
	req := storage.LeaseRequest{Max: 2, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: "tok-1", Now: now,
		InboxFilter: storage.InboxFilter{EndpointIDs: []string{"ep-1", "ep\x00"}}}
	if leased, err := leaseDeliveries(t, s, req); err != nil || len(leased) != 2 {
		t.Fatalf("Lease with an impossible endpoint beside ep-1 = %+v, %v; want both deliveries", leased, err)
	}
	errs := s.AckMany(t.Context(), []storage.LeaseRef{
		{InboxID: "inbox-1", LeaseToken: "tok-1"},
		{InboxID: "inbox-2", LeaseToken: "tok\x00"},
		{InboxID: "inbox\x00", LeaseToken: "tok-1"},
	}, now)
	if errs[0] != nil || !errors.Is(errs[1], storage.ErrLeaseLost) || !errors.Is(errs[2], storage.ErrNotFound) {
		t.Fatalf("AckMany = %v; want nil, lease lost, not found", errs)
	}
	if _, err := s.Nack(t.Context(), "inbox-2", "tok-1", now, 3, "out\x00put", now); err != nil {
		t.Fatalf("Nack with NUL in its error: %v", err)
	}
}

func leaseDeliveries(t *testing.T, s storage.InboxStore, req storage.LeaseRequest) ([]storage.LeasedDelivery, error) {
	t.Helper()
	result, err := s.Lease(t.Context(), req)
	return result.Deliveries, err
}

// TestConcurrentAcksShareCommits runs storagetest.AcksShareCommits with another transaction
// holding a lock on the inbox table that keeps every update waiting (reads go on).
func TestConcurrentAcksShareCommits(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	storagetest.AcksShareCommits(t, s, storagetest.CommitBatching{
		Block:   lockInbox(url),
		Batches: s.acks.Batches,
		Waiting: s.acks.Waiting,
	})
}

// TestConcurrentLeasesShareCommits runs storagetest.LeasesShareCommits on each lease path.
func TestConcurrentLeasesShareCommits(t *testing.T) {
	t.Parallel()
	onEachLeasePath(t, func(t *testing.T, s *Store, _ string, b storagetest.CommitBatching) {
		storagetest.LeasesShareCommits(t, s, b)
	})
}

// TestLeaseTakenWhenItsBatchRuns runs storagetest.LeaseTakenWhenItsBatchRuns on each lease
// path.
func TestLeaseTakenWhenItsBatchRuns(t *testing.T) {
	t.Parallel()
	onEachLeasePath(t, func(t *testing.T, s *Store, _ string, b storagetest.CommitBatching) {
		storagetest.LeaseTakenWhenItsBatchRuns(t, s, b)
	})
}

// TestUnreadableRecordFailsItsLeaseAlone runs storagetest.UnreadableRecordFailsItsLeaseAlone on
// each lease path.
func TestUnreadableRecordFailsItsLeaseAlone(t *testing.T) {
	t.Parallel()
	onEachLeasePath(t, func(t *testing.T, s *Store, url string, b storagetest.CommitBatching) {
		storagetest.UnreadableRecordFailsItsLeaseAlone(t, s, b, func(t *testing.T, inboxID string) {
			exec(t, connect(t, url), `UPDATE inbox SET headers = '\xff'::bytea WHERE id = $1`, inboxID)
		})
	})
}

// onEachLeasePath runs check, in parallel subtests, on a new store with one lease lane and
// the inbox locked as above for its batching: on the PostgreSQL path, where a batch's leases
// are one pipeline, and through cockroach-go's ExecuteTx, where they are statements of one
// explicit transaction.
func onEachLeasePath(t *testing.T, check func(t *testing.T, s *Store, url string, b storagetest.CommitBatching)) {
	for _, path := range []struct {
		name string
		open func(t *testing.T, url string) *Store
	}{{"PostgreSQL", open}, {"CockroachDB paths", migratedCockroachPathStore}} {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.Shared(t).NewDatabase(t)
			s := path.open(t, url)
			s.SetLeaseConcurrency(1)
			check(t, s, url, storagetest.CommitBatching{
				Block:   lockInbox(url),
				Batches: s.leaseLanes[0].Batches,
				Waiting: s.leaseLanes[0].Waiting,
			})
		})
	}
}

// migratedCockroachPathStore is cockroachPathStore on a database it has migrated.
func migratedCockroachPathStore(t *testing.T, url string) *Store {
	t.Helper()
	s := cockroachPathStore(t, url)
	if err := s.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return s
}

// lockInbox returns a CommitBatching.Block for the database at url: another transaction
// holds a lock on the inbox table that keeps every update waiting (reads go on).
func lockInbox(url string) func(t *testing.T) func() {
	return func(t *testing.T) func() {
		conn := connect(t, url)
		tx, err := conn.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(t.Context(), `LOCK TABLE inbox IN EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := tx.Rollback(t.Context()); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestAckManySharesOneCommit runs storagetest.AckManySharesOneCommit.
func TestAckManySharesOneCommit(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Shared(t).NewDatabase(t))
	storagetest.AckManySharesOneCommit(t, s, storagetest.CommitBatching{Batches: s.acks.Batches})
}

// explain returns PostgreSQL's plan for the statement, one line per plan node.
func explain(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `EXPLAIN `+sql, args...)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestLiveLeaseStatementsUseThePrimaryKey: the statements that change one delivery find it by
// its primary key even when the statistics are stale, here taken while every delivery was
// pending, before all of them were leased (or died). Written plainly, PostgreSQL then chose
// the state index and read every leased (or dead) delivery to find one.
func TestLiveLeaseStatementsUseThePrimaryKey(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	open(t, url)
	conn := connect(t, url)
	exec(t, conn, `ALTER TABLE inbox SET (autovacuum_enabled = false)`)
	exec(t, conn, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url,
		headers, body, received_at, state, attempts, visible_at)
		SELECT 'inbox-' || i, 'ep-1', 'evt-' || i, 'ep-1', 'op-' || i, 'sec', 'POST', 'u', '', '{}', $1, 'pending', 0, $1
		FROM generate_series(1, 20000) AS i`, base)
	exec(t, conn, `ANALYZE inbox`)
	wantPrimaryKey := func(t *testing.T, what, plan string) {
		t.Helper()
		if !strings.Contains(plan, "inbox_pkey") {
			t.Errorf("%s does not find the delivery by its primary key:\n%s", what, plan)
		}
	}
	now := base.Add(time.Minute)
	exec(t, conn, `UPDATE inbox SET state = 'leased', lease_token = 'tok', leased_until = $1`, now.Add(time.Hour))
	wantPrimaryKey(t, "Ack, Nack and ExtendLease's condition", explain(t, conn,
		`UPDATE inbox SET leased_until = $4 WHERE `+onLiveLease, "inbox-7", "tok", now, now))
	wantPrimaryKey(t, "the batch ack", explain(t, conn, ackBatchSQL, []string{"inbox-7", "inbox-8"}, []string{"tok", "tok"},
		[]time.Time{now, now}))
	exec(t, conn, `UPDATE inbox SET state = 'dead', lease_token = NULL, leased_until = NULL`)
	wantPrimaryKey(t, "Requeue", explain(t, conn, requeueSQL, "inbox-7", now))
	wantPrimaryKey(t, "Discard", explain(t, conn, discardSQL, "inbox-7", now, "discarded: poison"))
}

// TestEndpointStatementsUseTheEndpointIndex: the statements that pick deliveries by endpoint
// (a lease, its dead-lettering of expired leases, the dead letters' list) go along the
// (state, endpoint_id, visible_at, id) index, with one endpoint or several, among tens of
// thousands of deliveries of other endpoints, with bitmap scans on or off as the store runs
// each (noBitmapScans). Migration 27 dropped the (endpoint_id, state) index on the strength
// of this.
func TestEndpointStatementsUseTheEndpointIndex(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	open(t, url)
	conn := connect(t, url)
	exec(t, conn, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url,
		headers, body, received_at, state, attempts, visible_at, lease_token, leased_until)
		SELECT 'inbox-' || i, 'ep-' || i % 60, 'evt-' || i, 'ep-' || i % 60, 'op-' || i, 'sec', 'POST', 'u', '', '{}',
			$1, s.state, 1, $1::TIMESTAMPTZ + i * interval '1 ms',
			CASE WHEN s.state = 'leased' THEN 'tok' END, CASE WHEN s.state = 'leased' THEN $1::TIMESTAMPTZ END
		FROM generate_series(1, 30000) AS i,
			LATERAL (SELECT CASE WHEN i % 20 < 14 THEN 'pending' WHEN i % 20 < 18 THEN 'leased'
				WHEN i % 20 = 18 THEN 'dead' ELSE 'acked' END AS state) AS s`, base)
	exec(t, conn, `ANALYZE inbox`)
	now := base.Add(time.Hour)
	for _, endpoints := range [][]string{{"ep-7"}, {"ep-7", "ep-8", "ep-9"}} {
		filter := storage.InboxFilter{EndpointIDs: endpoints}
		req := storage.LeaseRequest{InboxFilter: filter, Max: 10, Visibility: time.Minute, MaxAttempts: 3,
			LeaseToken: "tok-2", Now: now}
		for _, c := range []struct {
			what      string
			statement func() (string, []any)
			setting   string // as the store runs it
		}{
			{"a lease", func() (string, []any) { return leaseLeasable(req) }, "off"},
			{"a lease's dead-lettering", func() (string, []any) { return deadLetterExpired(req) }, "off"},
			{"the dead letters' list", func() (string, []any) {
				return listDeadLetters(EnginePostgreSQL, filter, storage.DeadLetterKey{}, 100, 0)
			}, "on"},
		} {
			exec(t, conn, `SELECT set_config('enable_bitmapscan', $1, false)`, c.setting)
			sql, args := c.statement()
			plan := explain(t, conn, sql, args...)
			t.Logf("%s, endpoints %q:\n%s", c.what, endpoints, plan)
			if !strings.Contains(plan, "inbox_state_endpoint_id_visible_at_id_idx") || strings.Contains(plan, "Seq Scan on inbox") {
				t.Errorf("%s for endpoints %q does not go along the endpoint index:\n%s", c.what, endpoints, plan)
			}
		}
	}
}

// TestLeaseTurnsBitmapScansOffForItsTransactionOnly: the planner setting a lease sends with
// its statements holds for them, and is gone from the connection once the lease is done.
func TestLeaseTurnsBitmapScansOffForItsTransactionOnly(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Shared(t).NewDatabase(t)+"&pool_max_conns=1")
	err := s.inOneTrip(t.Context(), "test", false, func(ctx context.Context, conn *pgx.Conn) error {
		var b pgx.Batch
		b.Queue(noBitmapScans)
		b.Queue(`SELECT current_setting('enable_bitmapscan')`)
		br := conn.SendBatch(ctx, &b)
		defer br.Close()
		if _, err := br.Exec(); err != nil {
			return err
		}
		var v string
		if err := br.QueryRow().Scan(&v); err != nil || v != "off" {
			t.Errorf("enable_bitmapscan within the lease's round trip = %q (%v), want off", v, err)
		}
		return br.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 3, LeaseToken: "tok", Now: base}); err != nil {
		t.Fatal(err)
	}
	// The pool's one connection, after both.
	err = s.single(t.Context(), "test", func(ctx context.Context, conn *pgx.Conn) error {
		var v string
		if err := conn.QueryRow(ctx, `SELECT current_setting('enable_bitmapscan')`).Scan(&v); err != nil {
			return err
		}
		if v != "on" {
			t.Errorf("enable_bitmapscan after a lease = %q, want on", v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLeaseConcurrency: with leases bounded to one at a time, of three leases started while
// another transaction locks the inbox only one reaches the database (and waits on the lock);
// the others wait in the store, one of them until its context ends (unavailable), and the
// rest complete once the lock is gone. Unbounded, all three reach the database.
func TestLeaseConcurrency(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		slots   int
		waiting int // leases that reach the database and wait on the lock
	}{
		{"one at a time", 1, 1},
		{"no bound", 0, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.Shared(t).NewDatabase(t)
			s := open(t, url)
			s.SetLeaseConcurrency(c.slots)
			locker, watcher := connect(t, url), connect(t, url)
			tx, err := locker.Begin(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(t.Context(), `LOCK TABLE inbox IN EXCLUSIVE MODE`); err != nil {
				t.Fatal(err)
			}
			lease := func(ctx context.Context, token string) error {
				_, err := s.Lease(ctx, storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 3,
					LeaseToken: token, Now: base})
				return err
			}
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() { errs[i] = lease(t.Context(), fmt.Sprint("tok-", i)) })
			}
			// How many backends of this database wait on a lock: the leases that reached it.
			blocked := func() int {
				var n int
				if err := watcher.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
					WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n
			}
			for deadline := time.Now().Add(10 * time.Second); blocked() < c.waiting; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d leases waiting on the lock, want %d", blocked(), c.waiting)
				}
			}
			time.Sleep(200 * time.Millisecond) // time for any other lease to arrive as well
			if n := blocked(); n != c.waiting {
				t.Errorf("%d leases waiting on the lock, want %d", n, c.waiting)
			}
			if c.slots == 1 {
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				err := lease(ctx, "tok-impatient")
				cancel()
				if !errors.Is(err, storage.ErrUnavailable) {
					t.Errorf("a lease whose context ended while waiting for its turn: %v, want unavailable", err)
				}
			}
			if err := tx.Rollback(t.Context()); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("lease %d: %v", i, err)
				}
			}
		})
	}
}

// TestDeadLetteringSkipsLockedRows: two lease transactions that dead-letter two endpoints'
// expired leases in opposite orders (as two lease batches can, with --lease-concurrency above
// one) each skip what the other holds instead of waiting for it, so neither deadlocks, and
// every expired lease ends dead once both commit.
func TestDeadLetteringSkipsLockedRows(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	forEndpoint := func(id string) storage.LeaseRequest {
		return storage.LeaseRequest{Max: 10, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok-" + id, Now: base,
			InboxFilter: storage.InboxFilter{EndpointIDs: []string{id}}}
	}
	for _, id := range []string{"ep-1", "ep-2"} {
		if err := s.CreateEndpoint(t.Context(), endpoint(id)); err != nil {
			t.Fatal(err)
		}
		d := delivery("evt-"+id, "inbox-"+id)
		d.EndpointID, d.Scope = id, id
		mustClaim(t, s, d, true)
		if leased, err := leaseDeliveries(t, s, forEndpoint(id)); err != nil || len(leased) != 1 {
			t.Fatalf("lease of %s: %d leased, %v", id, len(leased), err)
		}
	}
	later := base.Add(2 * time.Minute) // both leases expired, their one attempt used
	deadLetter := func(tx pgx.Tx, id string) (int64, error) {
		req := forEndpoint(id)
		req.Now = later
		sql, args := deadLetterExpired(req)
		tag, err := tx.Exec(t.Context(), sql, args...)
		return tag.RowsAffected(), err
	}
	begin := func() pgx.Tx {
		tx, err := connect(t, url).Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(context.Background()) })
		// A wait on the other's lock fails the test here rather than hanging it.
		if _, err := tx.Exec(t.Context(), `SET LOCAL lock_timeout = '5s'`); err != nil {
			t.Fatal(err)
		}
		return tx
	}
	a, b := begin(), begin()
	for _, step := range []struct {
		tx   pgx.Tx
		name string
		id   string
		want int64
	}{
		{a, "a", "ep-1", 1}, {b, "b", "ep-2", 1},
		{a, "a", "ep-2", 0}, {b, "b", "ep-1", 0}, // each held by the other: skipped
	} {
		n, err := deadLetter(step.tx, step.id)
		if err != nil || n != step.want {
			t.Fatalf("transaction %s dead-lettering %s: %d rows, %v; want %d", step.name, step.id, n, err, step.want)
		}
	}
	for _, tx := range []pgx.Tx{a, b} {
		if err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	letters, _, err := s.ListDeadLetters(t.Context(), storage.InboxFilter{}, storage.DeadLetterKey{}, 10, 0)
	if err != nil || len(letters) != 2 {
		t.Fatalf("ListDeadLetters = %d letters, %v; want both deliveries", len(letters), err)
	}
}

// TestRequeueOfUnknownOutcome: a Requeue whose reply is lost after PostgreSQL committed it was
// run again as if nothing had been sent, found no dead delivery (the first run had requeued
// it) and answered ErrNotFound: the operator was told there is no such dead letter while it
// was back in the queue. An outcome the store cannot know is ErrUnavailable, as for every
// other write of the inbox; the delivery is then pending, once.
func TestRequeueOfUnknownOutcome(t *testing.T) {
	t.Parallel()
	s, proxy := storeBehindFaultProxy(t)
	mustClaim(t, s, delivery("evt-1", "inbox-1"), true)
	// One attempt allowed: the nack moves it to the dead letters.
	leased := leaseOne(t, s, "tok-1")
	if dead, err := s.Nack(t.Context(), leased.InboxID, "tok-1", base.Add(time.Minute), 1, "boom", base.Add(time.Minute)); err != nil || !dead {
		t.Fatalf("Nack = %v, %v; want dead", dead, err)
	}

	proxy.arm(dropReply)
	err := s.Requeue(t.Context(), leased.InboxID, base.Add(2*time.Minute))
	proxy.wantFired(t, dropReply)
	if errors.Is(err, storage.ErrNotFound) || !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("Requeue whose reply was lost = %v, want ErrUnavailable (it did requeue)", err)
	}
	res, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 10, Visibility: time.Hour, MaxAttempts: 5,
		LeaseToken: "tok-2", Now: base.Add(3 * time.Minute)})
	if err != nil || len(res.Deliveries) != 1 || res.Deliveries[0].InboxID != leased.InboxID || res.Deliveries[0].Attempts != 1 {
		t.Fatalf("Lease after the requeue = %+v, %v; want the delivery once, on its first attempt", res, err)
	}
}

// TestDeadLetterPagesIgnoreTheDatabaseCollation: the page's last delivery, whose key the next
// page starts after, is the last by id bytes (sortLeased); on a database whose collation
// orders ids otherwise ("a3" before "B1"), picking and comparing by the collation listed "B1"
// on two pages. The id column is given a language's collation, as a database created with
// one gives every text column.
func TestDeadLetterPagesIgnoreTheDatabaseCollation(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	conn := connect(t, url)
	exec(t, conn, `ALTER TABLE inbox ALTER COLUMN id TYPE TEXT COLLATE "und-x-icu"`)
	ids := []string{"b5", "B1", "a3", "A2"}
	for i, id := range ids {
		d := delivery(fmt.Sprintf("evt-%d", i), id)
		if r, err := s.Claim(t.Context(), d); err != nil || !r.Accepted {
			t.Fatalf("Claim %s = %+v, %v", id, r, err)
		}
	}
	now := base.Add(time.Hour)
	leased, err := leaseDeliveries(t, s, storage.LeaseRequest{Max: 10, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok", Now: now})
	if err != nil || len(leased) != len(ids) {
		t.Fatalf("Lease = %d, %v", len(leased), err)
	}
	for _, d := range leased {
		if _, err := s.Nack(t.Context(), d.InboxID, "tok", now, 1, "", now); err != nil {
			t.Fatalf("Nack %s: %v", d.InboxID, err)
		}
	}
	var (
		got   []string
		after storage.DeadLetterKey
	)
	for range len(ids) + 1 {
		page, more, err := s.ListDeadLetters(t.Context(), storage.InboxFilter{}, after, 2, 0)
		if err != nil {
			t.Fatalf("ListDeadLetters after %+v: %v", after, err)
		}
		for _, d := range page {
			got = append(got, d.InboxID)
		}
		if !more || len(page) == 0 {
			break
		}
		after = storage.DeadLetterKeyOf(page[len(page)-1])
	}
	if want := []string{"A2", "B1", "a3", "b5"}; !slices.Equal(got, want) {
		t.Fatalf("pages of 2 listed %q, want %q (by bytes, each once)", got, want)
	}
}

// TestExtensionTakenWhenItRuns runs storagetest.ExtensionTakenWhenItRuns on each transaction
// path with every connection of the pool lent out, which an extension waits for.
func TestExtensionTakenWhenItRuns(t *testing.T) {
	onBothTransactionPaths(t, func(t *testing.T, s *Store) {
		storagetest.ExtensionTakenWhenItRuns(t, s, holdConnections(s))
	})
}

// holdConnections returns a block that borrows every connection of s's pool until released.
func holdConnections(s *Store) func(t *testing.T) func() {
	return func(t *testing.T) func() {
		var held []*pgxpool.Conn
		for range s.pool.Stat().MaxConns() {
			conn, err := s.pool.Acquire(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, conn)
		}
		return func() {
			for _, conn := range held {
				conn.Release()
			}
		}
	}
}

// TestSweepStatementsReadARange: each statement of Sweep finds its batch along an index range
// bounded by its time, so that a sweep costs what it deletes, not what the store keeps: here
// 30,000 acked records and their claims, none of them due. Bounded by acked_at alone, which
// no index holds, the acked records' batch read every acked record at every sweep.
func TestSweepStatementsReadARange(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	open(t, url)
	conn := connect(t, url)
	exec(t, conn, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url,
		headers, body, received_at, state, attempts, visible_at, acked_at)
		SELECT 'inbox-' || i, 'ep-1', 'evt-' || i, 'ep-1', 'op-' || i, 'sec', 'POST', 'u', '', '{}',
			$1::TIMESTAMPTZ + i * interval '1 ms', CASE WHEN i % 10 = 0 THEN 'pending' ELSE 'acked' END, 1,
			$1::TIMESTAMPTZ + i * interval '1 ms', $1::TIMESTAMPTZ + i * interval '1 ms' + interval '1 s'
		FROM generate_series(1, 30000) AS i`, base)
	exec(t, conn, `INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
		SELECT scope, event_id, id, operation_key, received_at FROM inbox`)
	exec(t, conn, `ANALYZE inbox`)
	exec(t, conn, `ANALYZE claims`)
	before := base.Add(-time.Hour)
	for _, c := range []struct {
		what, sql, index, cond string
		args                   []any
	}{
		{"the acked records' batch", sweepAckedSQL, "inbox_state_visible_at_idx", "visible_at <", []any{before, int64(500)}},
		{"the claims' batch", sweepClaimsSQL, "claims_first_received_at_idx", "first_received_at <", []any{before, int64(500), before.Add(-time.Minute)}},
	} {
		plan := explain(t, conn, c.sql, c.args...)
		t.Logf("%s:\n%s", c.what, plan)
		var cond bool
		for _, line := range strings.Split(plan, "\n") {
			cond = cond || strings.Contains(line, "Index Cond") && strings.Contains(line, c.cond)
		}
		if !strings.Contains(plan, c.index) || !cond || strings.Contains(plan, "Seq Scan") {
			t.Errorf("%s does not read a range of %s bounded by %s:\n%s", c.what, c.index, c.cond, plan)
		}
	}
}

// TestConcurrentSweepsShareTheWork: instances sweep at the same time (every instance runs the
// sweeper), each until its batches come back short, as server.SweepOnce does. Together they
// delete every due row exactly once, and none fails (a deadlock, a serialization failure).
func TestConcurrentSweepsShareTheWork(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	stores := []*Store{open(t, url), open(t, url), open(t, url), open(t, url)}
	conn := connect(t, url)
	const n = 6000
	exec(t, conn, `INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method, url,
		headers, body, received_at, state, attempts, visible_at, acked_at)
		SELECT 'inbox-' || i, 'ep-1', 'evt-' || i, 'ep-1', 'op-' || i, 'sec', 'POST', 'u', '', '{}',
			$1::TIMESTAMPTZ + i * interval '1 ms', 'acked', 1, $1::TIMESTAMPTZ + i * interval '1 ms',
			$1::TIMESTAMPTZ + i * interval '1 ms' + interval '1 s'
		FROM generate_series(1, $2::BIGINT) AS i`, base, n)
	exec(t, conn, `INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
		SELECT scope, event_id, id, operation_key, received_at FROM inbox`)
	req := storage.SweepRequest{AckedBefore: base.Add(time.Hour), ClaimsBefore: base.Add(time.Hour), Batch: 100}
	var (
		mu    sync.Mutex
		total storage.SweepResult
		wg    sync.WaitGroup
	)
	for round := 0; round < 3; round++ {
		for _, s := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					res, err := s.Sweep(t.Context(), req)
					if err != nil {
						t.Errorf("Sweep: %v", err)
						return
					}
					mu.Lock()
					total.InboxDeleted += res.InboxDeleted
					total.ClaimsDeleted += res.ClaimsDeleted
					mu.Unlock()
					if res.InboxDeleted < int64(req.Batch) && res.ClaimsDeleted < int64(req.Batch) {
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	if total != (storage.SweepResult{InboxDeleted: n, ClaimsDeleted: n}) {
		t.Fatalf("concurrent sweeps deleted %+v, want %d of each", total, n)
	}
}

// TestConcurrentLeaseLanesNeverOverlap: with several lease lanes (separate
// transactions at once) and workers that ack some deliveries and abandon the others, on a
// clock that moves on with every reading, no delivery is leased again before its last lease
// ended, none acked is leased again, and every delivery ends acked or dead.
func TestConcurrentLeaseLanesNeverOverlap(t *testing.T) {
	s := open(t, pgtest.Shared(t).NewDatabase(t))
	s.SetLeaseConcurrency(4)
	ctx := t.Context()
	var mu sync.Mutex
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	const deliveries, maxAttempts, visibility = 60, 4, 40 * time.Millisecond
	for i := range deliveries {
		id := fmt.Sprintf("in-%03d", i)
		d := storage.Delivery{InboxID: id, Scope: "ep-1", EventID: "evt-" + id, EndpointID: "ep-1", OperationKey: "op-" + id,
			SecretID: "sec-1", Method: "POST", URL: "https://h.example/", Body: []byte("{}"), ReceivedAt: now()}
		if r, err := s.Claim(ctx, d); err != nil || !r.Accepted {
			t.Fatalf("Claim: %+v %v", r, err)
		}
	}
	type leaseSpan struct {
		start, until time.Time
		acked        bool
	}
	var spansMu sync.Mutex
	spans := map[string][]leaseSpan{}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			for i := 0; i < 200; i++ {
				res, err := s.Lease(ctx, storage.LeaseRequest{Max: 3, Visibility: visibility, MaxAttempts: maxAttempts,
					LeaseToken: fmt.Sprintf("tok-%d-%d", w, i), Clock: now})
				if err != nil {
					t.Errorf("Lease: %v", err)
					return
				}
				for _, d := range res.Deliveries {
					span := leaseSpan{start: d.LeasedUntil.Add(-visibility), until: d.LeasedUntil}
					if rng.IntN(3) == 0 {
						at := now()
						err := s.Ack(ctx, d.InboxID, d.LeaseToken, at)
						switch {
						case err == nil:
							span.acked = true
							if !at.Before(d.LeasedUntil) {
								t.Errorf("%s acked at %s, after its lease ended at %s", d.InboxID, at, d.LeasedUntil)
							}
						case !errors.Is(err, storage.ErrLeaseLost):
							t.Errorf("Ack %s: %v", d.InboxID, err)
						}
					}
					spansMu.Lock()
					spans[d.InboxID] = append(spans[d.InboxID], span)
					spansMu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	takeovers := 0
	for _, list := range spans {
		takeovers += len(list) - 1
	}
	if takeovers == 0 {
		t.Fatalf("no lease was taken over: the test shows nothing")
	}
	for id, list := range spans {
		slices.SortFunc(list, func(a, b leaseSpan) int { return a.start.Compare(b.start) })
		for i := 1; i < len(list); i++ {
			if list[i].start.Before(list[i-1].until) {
				t.Errorf("%s leased at %s while its lease until %s was live", id, list[i].start, list[i-1].until)
			}
			if list[i-1].acked {
				t.Errorf("%s leased again after an ack", id)
			}
		}
		if len(list) > maxAttempts {
			t.Errorf("%s leased %d times, more than %d attempts", id, len(list), maxAttempts)
		}
	}
}
