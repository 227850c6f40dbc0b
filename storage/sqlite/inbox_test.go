package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// TestInboxUpgradeKeepsDeliveriesLeasable migrates a database holding inbox records written
// before the delivery state existed (schema version 6): they become pending, visible since
// they were received.
func TestInboxUpgradeKeepsDeliveriesLeasable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := sqlite.CreateSchemaAt(t.Context(), db, 6); err != nil {
		t.Fatalf("schema version 6: %v", err)
	}
	received := time.Date(2025, time.March, 14, 15, 9, 26, 535897000, time.UTC)
	if _, err := db.Exec(`INSERT INTO inbox (id, scope, event_id, endpoint_id, operation_key, secret_id, method,
		url, headers, body, received_at) VALUES ('inbox-1', 'ep-1', 'evt-1', 'ep-1', 'op-1', 'sec-1', 'POST',
		'https://hooks.example.com/in/ep-1', ?, X'7B7D', ?)`, storage.EncodeHeaders(nil), received.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open migrates: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	stats, err := s.InboxStats(t.Context())
	if err != nil {
		t.Fatalf("InboxStats: %v", err)
	}
	if want := (storage.EndpointInboxStats{EndpointID: "ep-1", Pending: 1, OldestPendingAt: received}); len(stats) != 1 || stats[0] != want {
		t.Fatalf("InboxStats after the upgrade = %+v, want [%+v]", stats, want)
	}
	result, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 5, Visibility: time.Minute, MaxAttempts: 3,
		LeaseToken: "tok", Now: received})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	got := result.Deliveries
	if len(got) != 1 || got[0].InboxID != "inbox-1" || got[0].Attempts != 1 || !got[0].VisibleAt.Equal(received) {
		t.Fatalf("Lease after the upgrade = %+v, want inbox-1 visible at %s, attempt 1", got, received)
	}
}

// TestInboxCountsFollowEveryChange drives the inbox through random claims (some of them
// repeats), leases (with and without an endpoint filter, some expiring), acks, nacks (some to
// dead), requeues, moves of deliveries with no attempts left to dead, and sweeps, and after
// every step compares InboxStats, which reads the pending counts that those writes keep
// (migration 25), with a count of the inbox itself. Some claims reuse an inbox id and fail on
// their own, in a batch with others that commit, and the writes go through two stores on the
// file, as two processes would. It then checks that Open recounts a table that went wrong.
func TestInboxCountsFollowEveryChange(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	ctx := t.Context()
	// A second store on the same file, as a second process would open it: the writes of both
	// keep one set of counts.
	other, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stores := []*sqlite.Store{s, other}
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	counted := func() []storage.EndpointInboxStats {
		t.Helper()
		rows, err := raw.QueryContext(ctx, `SELECT endpoint_id,
			count(CASE WHEN state = 'pending' THEN 1 END), count(CASE WHEN state = 'leased' THEN 1 END),
			count(CASE WHEN state = 'dead' THEN 1 END), min(CASE WHEN state = 'pending' THEN visible_at END),
			min(CASE WHEN state = 'leased' THEN leased_until END)
			FROM inbox WHERE state IN ('pending', 'leased', 'dead') GROUP BY endpoint_id ORDER BY endpoint_id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var list []storage.EndpointInboxStats
		for rows.Next() {
			var st storage.EndpointInboxStats
			var oldest, leaseEnd sql.NullInt64
			if err := rows.Scan(&st.EndpointID, &st.Pending, &st.Leased, &st.Dead, &oldest, &leaseEnd); err != nil {
				t.Fatal(err)
			}
			if oldest.Valid {
				st.OldestPendingAt = time.UnixMicro(oldest.Int64).UTC()
			}
			if leaseEnd.Valid {
				st.EarliestLeaseEnd = time.UnixMicro(leaseEnd.Int64).UTC()
			}
			list = append(list, st)
		}
		return list
	}
	check := func(step string) {
		t.Helper()
		got, err := s.InboxStats(ctx)
		if err != nil {
			t.Fatalf("%s: InboxStats: %v", step, err)
		}
		if want := counted(); !slices.Equal(got, want) {
			t.Fatalf("%s: InboxStats = %+v, the inbox counts %+v", step, got, want)
		}
	}

	endpoints := []string{"ep-a", "ep-b", "ep-c"}
	for _, id := range endpoints {
		if err := s.CreateEndpoint(ctx, storage.Endpoint{ID: id, Provider: "github", DedupeScope: id, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	writer := func() *sqlite.Store { return stores[r.IntN(len(stores))] }
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type lease struct{ inboxID, token string }
	var leased []lease
	seq := 0
	done := map[string]int{}
	for step := range 400 {
		now = now.Add(time.Duration(r.IntN(5)) * time.Second)
		var what string
		switch op := r.IntN(10); {
		case op < 4: // claims, concurrent so that they share batches, some of them repeats
			what = "claims"
			var wg sync.WaitGroup
			var reusedFailed atomic.Int64
			before := seq // ids of earlier steps only: this step's claims race each other
			for range 1 + r.IntN(8) {
				seq++
				ep := endpoints[r.IntN(len(endpoints))]
				eventID := fmt.Sprintf("evt-%d", seq)
				if r.IntN(4) == 0 {
					eventID = fmt.Sprintf("evt-%d", r.IntN(seq)+1) // maybe claimed already
				}
				inboxID := fmt.Sprintf("inbox-%d", seq)
				reused := before > 0 && r.IntN(6) == 0
				if reused {
					// An inbox id taken already (unless its claim was a repeat): this claim alone fails.
					inboxID = fmt.Sprintf("inbox-%d", r.IntN(before)+1)
				}
				d := storage.Delivery{InboxID: inboxID, Scope: ep, EventID: eventID, EndpointID: ep,
					OperationKey: fmt.Sprintf("op-%d", seq), Method: "POST", URL: "https://example.com/" + ep, Body: []byte("{}"),
					ReceivedAt: now.Add(-time.Duration(r.IntN(100)) * time.Second)}
				w := writer()
				wg.Go(func() {
					_, err := w.Claim(ctx, d)
					switch {
					case err != nil && reused:
						reusedFailed.Add(1)
					case err != nil:
						t.Errorf("Claim: %v", err)
					}
				})
			}
			wg.Wait()
			done["claim of a reused inbox id"] += int(reusedFailed.Load())
		case op < 6: // a lease, sometimes of one endpoint only, with short leases that expire
			what = "lease"
			req := storage.LeaseRequest{Max: 1 + r.IntN(4), Visibility: time.Duration(1+r.IntN(40)) * time.Second,
				MaxAttempts: 1 + r.IntN(3), LeaseToken: fmt.Sprintf("tok-%d", step), Now: now}
			if r.IntN(2) == 0 {
				req.EndpointIDs = []string{endpoints[r.IntN(len(endpoints))]}
			}
			res, err := writer().Lease(ctx, req)
			if err != nil {
				t.Fatalf("Lease: %v", err)
			}
			for _, d := range res.Deliveries {
				leased = append(leased, lease{d.InboxID, req.LeaseToken})
			}
		case op < 9 && len(leased) > 0: // settle a lease, most often a recent one (an expired one changes nothing)
			i := len(leased) - 1 - min(r.IntN(4), len(leased)-1)
			l := leased[i]
			leased = append(leased[:i], leased[i+1:]...)
			switch r.IntN(3) {
			case 0:
				what = "ack"
				if err := writer().Ack(ctx, l.inboxID, l.token, now); err != nil {
					what = "ack of a lost lease"
				}
			default:
				what = "nack"
				isDead, err := writer().Nack(ctx, l.inboxID, l.token, now.Add(10*time.Second), 1+r.IntN(2), "failed", now)
				switch {
				case err != nil:
					what = "nack of a lost lease"
				case isDead:
					what = "nack to dead"
				}
			}
		case r.IntN(3) == 0:
			what = "requeue"
			letters, _, err := s.ListDeadLetters(ctx, storage.InboxFilter{}, storage.DeadLetterKey{}, 50, 0)
			if err != nil {
				t.Fatalf("ListDeadLetters: %v", err)
			}
			if len(letters) == 0 {
				what = "no dead letter to requeue"
				break
			}
			if err := writer().Requeue(ctx, letters[r.IntN(len(letters))].InboxID, now); err != nil {
				t.Fatalf("Requeue: %v", err)
			}
		case r.IntN(2) == 0: // as a restart with a lower --max-attempts does
			what = "dead-letter exhausted"
			n, err := writer().DeadLetterExhausted(ctx, storage.ExhaustedRequest{MaxAttempts: 1 + r.IntN(2),
				Reason: "attempts used up", Batch: 1 + r.IntN(5), Now: now})
			if err != nil {
				t.Fatalf("DeadLetterExhausted: %v", err)
			}
			if n == 0 {
				what = "nothing exhausted to dead-letter"
			}
		default:
			what = "sweep"
			if _, err := writer().Sweep(ctx, storage.SweepRequest{AckedBefore: now, ClaimsBefore: now.Add(-time.Hour), Batch: 1 + r.IntN(5)}); err != nil {
				t.Fatalf("Sweep: %v", err)
			}
		}
		check(fmt.Sprintf("step %d (%s)", step, what))
		done[what]++
	}
	for _, what := range []string{"claims", "claim of a reused inbox id", "lease", "ack", "nack", "nack to dead", "requeue", "dead-letter exhausted", "sweep"} {
		if done[what] < 3 {
			t.Errorf("%q happened %d times in the run, want at least 3: %v", what, done[what], done)
		}
	}
	if st := counted(); len(st) == 0 {
		t.Fatal("the run left no unfinished deliveries: the last checks compared nothing")
	}

	// A process of an older release adds a delivery without counting it; Open sets it right.
	if _, err := raw.ExecContext(ctx, `UPDATE inbox_pending SET n = n + 7`); err != nil {
		t.Fatal(err)
	}
	for _, st := range stores {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s, err = sqlite.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check("after reopening")
}

// TestConcurrentAcksShareCommits runs storagetest.AcksShareCommits with another connection
// holding SQLite's write lock.
func TestConcurrentAcksShareCommits(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	storagetest.AcksShareCommits(t, s, storagetest.CommitBatching{
		Block:   holdWriteLock(path),
		Batches: func() int64 { return sqlite.AckBatches(s) },
		Waiting: func() int { return sqlite.AcksWaiting(s) },
	})
}

// TestConcurrentLeasesShareCommits runs storagetest.LeasesShareCommits with another
// connection holding SQLite's write lock.
func TestConcurrentLeasesShareCommits(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	storagetest.LeasesShareCommits(t, s, leaseBatching(s, path))
}

// leaseBatching is the storagetest.CommitBatching of the store's leases, with another
// connection holding the write lock of the database at path.
func leaseBatching(s *sqlite.Store, path string) storagetest.CommitBatching {
	return storagetest.CommitBatching{
		Block:   holdWriteLock(path),
		Batches: func() int64 { return sqlite.LeaseBatches(s) },
		Waiting: func() int { return sqlite.LeasesWaiting(s) },
	}
}

// TestLeaseTakenWhenItsBatchRuns runs storagetest.LeaseTakenWhenItsBatchRuns with another
// connection holding SQLite's write lock.
func TestLeaseTakenWhenItsBatchRuns(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	storagetest.LeaseTakenWhenItsBatchRuns(t, s, leaseBatching(s, path))
}

// TestUnreadableRecordFailsItsLeaseAlone runs storagetest.UnreadableRecordFailsItsLeaseAlone
// with another connection holding SQLite's write lock.
func TestUnreadableRecordFailsItsLeaseAlone(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	storagetest.UnreadableRecordFailsItsLeaseAlone(t, s, leaseBatching(s, path), func(t *testing.T, inboxID string) {
		raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.ExecContext(t.Context(), `UPDATE inbox SET headers = x'ff' WHERE id = ?`, inboxID); err != nil {
			t.Fatal(err)
		}
	})
}

// holdWriteLock returns a CommitBatching.Block for the database at path: another connection
// holds the write lock, and the first batch waits for it (busy timeout 10 s).
func holdWriteLock(path string) func(t *testing.T) func() {
	return func(t *testing.T) func() {
		raw, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		lock, err := raw.Conn(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := lock.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		return func() {
			if _, err := lock.ExecContext(t.Context(), "ROLLBACK"); err != nil {
				t.Error(err)
			}
			lock.Close()
			raw.Close()
		}
	}
}

// TestAckManySharesOneCommit runs storagetest.AckManySharesOneCommit.
func TestAckManySharesOneCommit(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	storagetest.AckManySharesOneCommit(t, s, storagetest.CommitBatching{Batches: func() int64 { return sqlite.AckBatches(s) }})
}

// TestEmptyLeaseTakesNoWriterTurn: a lease that finds nothing to do is answered from the
// read-only pool, so workers polling an empty inbox never wait for (or hold) the one writer.
// Here another connection holds the write lock throughout; the lease must still answer at once.
func TestEmptyLeaseTakesNoWriterTurn(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	lock, err := raw.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(t.Context(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = lock.ExecContext(t.Context(), "ROLLBACK") }()
	for _, filter := range []storage.InboxFilter{{}, {EndpointIDs: []string{"ep-1", "ep-2"}}} {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		res, err := s.Lease(ctx, storage.LeaseRequest{InboxFilter: filter, Max: 10, Visibility: time.Minute,
			MaxAttempts: 3, LeaseToken: "tok", Now: time.Now()})
		cancel()
		if err != nil || len(res.Deliveries) != 0 || res.ExpiredToDead != 0 {
			t.Errorf("lease of an empty inbox (filter %+v) with the writer busy = %+v, %v; want nothing, at once", filter, res, err)
		}
	}
}

// TestExtensionTakenWhenItRuns runs storagetest.ExtensionTakenWhenItRuns with another
// connection holding SQLite's write lock, which an extension waits for up to the busy timeout.
func TestExtensionTakenWhenItRuns(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	storagetest.ExtensionTakenWhenItRuns(t, s, holdWriteLock(path))
}
