package crdb

import (
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestAckBehindAConcurrentAckSaysAlreadyAcked: a worker whose ack timed out retries it while
// the first is still committing (a slow commit is what timed it out). The retry's UPDATE waits
// for the first's row lock and then matches nothing, the delivery acked; the state it reported
// was read in the same statement, from the snapshot taken before the wait, where the delivery
// is still leased, so the retry heard "lease lost" instead of ALREADY_ACKED, and the worker
// reported done work unsettled.
func TestAckBehindAConcurrentAckSaysAlreadyAcked(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	mustClaim(t, s, delivery("evt-1", "inbox-1"), true)
	now := base.Add(time.Minute)
	if leased, err := leaseDeliveries(t, s, storage.LeaseRequest{Max: 1, Visibility: time.Hour, MaxAttempts: 3, LeaseToken: "tok-1", Now: now}); err != nil || len(leased) != 1 {
		t.Fatalf("Lease = %+v, %v", leased, err)
	}
	// The first ack, holding the row until it commits.
	first, err := connect(t, url).Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Exec(t.Context(), `UPDATE inbox SET state = 'acked', acked_at = $2, lease_token = NULL, leased_until = NULL
		WHERE id = $1`, "inbox-1", now); err != nil {
		t.Fatal(err)
	}
	retried := make(chan error, 1)
	go func() { retried <- s.Ack(t.Context(), "inbox-1", "tok-1", now) }()
	watch := connect(t, url)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var waiting int
		if err := watch.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the retried ack never waited for the first one's lock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := first.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-retried; !errors.Is(err, storage.ErrAlreadyAcked) {
		t.Fatalf("the retried ack, behind the first one's commit = %v; want %v", err, storage.ErrAlreadyAcked)
	}
}
