package crdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// bothTransactionPaths open a migrated store on a database URL on each of its transaction
// paths: PostgreSQL's pipelined one, and CockroachDB's (ExecuteTx), run on PostgreSQL.
var bothTransactionPaths = map[string]func(t *testing.T, url string) *Store{
	"PostgreSQL":       open,
	"CockroachDB path": migratedCockroachPathStore,
}

// onBothTransactionPaths runs test, in parallel, on a migrated store of each transaction path
// (bothTransactionPaths).
func onBothTransactionPaths(t *testing.T, test func(t *testing.T, s *Store)) {
	t.Helper()
	onBothTransactionPathsAt(t, func(t *testing.T, s *Store, _ string) { test(t, s) })
}

// onBothTransactionPathsAt is onBothTransactionPaths for a test that also reaches the store's
// database at url.
func onBothTransactionPathsAt(t *testing.T, test func(t *testing.T, s *Store, url string)) {
	t.Helper()
	t.Parallel()
	for name, openOn := range bothTransactionPaths {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			url := pgtest.Shared(t).NewDatabase(t)
			test(t, openOn(t, url), url)
		})
	}
}

// onBothTransactionPathsWithEndpoint is onBothTransactionPaths with endpoint ep-1 created.
func onBothTransactionPathsWithEndpoint(t *testing.T, test func(t *testing.T, s *Store)) {
	t.Helper()
	onBothTransactionPaths(t, func(t *testing.T, s *Store) {
		if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
			t.Fatal(err)
		}
		test(t, s)
	})
}

// TestClaimBatch drives commitClaims, the group commit's batch, directly, on both transaction
// paths: what a batch must get right whatever its mix of new, known, repeated and faulty claims.
func TestClaimBatch(t *testing.T) {
	onBothTransactionPathsWithEndpoint(t, func(t *testing.T, s *Store) {
		mustClaim(t, s, delivery("evt-known", "inbox-known"), true)

		batch := []storage.Delivery{
			delivery("evt-a", "inbox-a"),
			delivery("evt-known", "inbox-k2"),    // claimed before the batch
			delivery("evt-a", "inbox-a2"),        // same identity as the first, later
			delivery("evt-b", "inbox-b"),         // new
			delivery("evt-known", "inbox-known"), // a retry of the earlier claim
			delivery("evt-a", "inbox-a"),         // a retry of the batch's own first claim
		}
		results, errs, err := s.commitClaims(batch)
		if err != nil {
			t.Fatalf("commitClaims: %v", err)
		}
		want := []struct {
			accepted bool
			inboxID  string
		}{
			{true, "inbox-a"}, {false, "inbox-known"}, {false, "inbox-a"}, {true, "inbox-b"},
			{true, "inbox-known"}, {true, "inbox-a"},
		}
		for i, w := range want {
			if errs[i] != nil {
				t.Fatalf("claim %d (%s): %v", i, batch[i].InboxID, errs[i])
			}
			r := results[i]
			if r.Accepted != w.accepted || r.InboxID != w.inboxID || r.OperationKey != "op-"+w.inboxID || !r.FirstReceivedAt.Equal(base) {
				t.Errorf("claim %d (%s) = %+v, want accepted %v held by %s", i, batch[i].InboxID, r, w.accepted, w.inboxID)
			}
		}
		wantCount(t, s, 3)
		if _, err := s.GetDelivery(t.Context(), "inbox-a2"); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("the in-batch duplicate was stored: %v", err)
		}

		// An inbox id reused by another identity fails that claim alone.
		batch = []storage.Delivery{delivery("evt-c", "inbox-c"), delivery("evt-d", "inbox-b"), delivery("evt-e", "inbox-e")}
		results, errs, err = s.commitClaims(batch)
		if err != nil {
			t.Fatalf("commitClaims with a reused inbox id: %v", err)
		}
		if !errors.Is(errs[1], storage.ErrAlreadyExists) {
			t.Fatalf("claim with a reused inbox id: %+v, %v; want ErrAlreadyExists", results[1], errs[1])
		}
		for _, i := range []int{0, 2} {
			if errs[i] != nil || !results[i].Accepted {
				t.Fatalf("claim %d beside the reused inbox id: %+v, %v; want accepted", i, results[i], errs[i])
			}
		}
		wantCount(t, s, 5)
		mustClaim(t, s, delivery("evt-d", "inbox-d"), true)
	})
}

// TestStuckClaimBatchIsBounded holds the claim of one identity in a transaction that never
// ends (another instance hung in the middle of one, an operator's forgotten session), so that a
// batch claiming that identity waits for its lock. The batch's callers must get their answer
// (UNAVAILABLE: the provider retries) within a bound, and the claims queued behind it must not
// wait for ever: PostgreSQL has one claim lane, and without a bound every new event of the
// instance stalled for as long as the lock was held (the batch ran under context.Background()).
func TestStuckClaimBatchIsBounded(t *testing.T) {
	s, url := storeWithShortBatches(t)
	blocker := connect(t, url)
	exec(t, blocker, "BEGIN")
	exec(t, blocker, `INSERT INTO claims (scope, event_id, inbox_id, operation_key, first_received_at)
		VALUES ('ep-1', 'evt-stuck', 'inbox-other', 'op-inbox-other', now())`)

	wantUnavailableSoon(t, "claim of an identity", func() error {
		_, err := s.Claim(context.Background(), delivery("evt-stuck", "inbox-1"))
		return err
	})

	// The lane is free again: a claim of another identity is accepted while the lock is held.
	ctx, cancel := context.WithTimeout(t.Context(), 10*batchTimeout)
	defer cancel()
	r, err := retryUnavailable(t, func() (storage.ClaimResult, error) { return s.Claim(ctx, delivery("evt-free", "inbox-2")) })
	if err != nil || !r.Accepted {
		t.Fatalf("claim of another identity behind the stuck one = %+v, %v; want accepted", r, err)
	}

	// Once the other transaction is gone, the stuck identity is claimed exactly once: by the
	// retry, or (if the abandoned statement went through after all) found held by inbox-1.
	exec(t, blocker, "ROLLBACK")
	r, err = retryUnavailable(t, func() (storage.ClaimResult, error) { return s.Claim(t.Context(), delivery("evt-stuck", "inbox-3")) })
	if err != nil {
		t.Fatalf("claim after the lock was released: %v", err)
	}
	if !r.Accepted && r.InboxID != "inbox-1" {
		t.Fatalf("claim after the lock was released = %+v, want accepted or held by inbox-1", r)
	}
	if _, err := s.GetDelivery(t.Context(), r.InboxID); err != nil {
		t.Fatalf("GetDelivery(%s) of the claim: %v", r.InboxID, err)
	}
}

// TestStuckAckBatchIsBounded: an ack batch waiting for the row lock of a transaction that does
// not end answers its callers UNAVAILABLE within the bound, rather than holding every ack of
// the instance behind it for as long as the lock is held.
func TestStuckAckBatchIsBounded(t *testing.T) {
	s, url := storeWithShortBatches(t)
	mustClaim(t, s, delivery("evt-1", "inbox-1"), true)
	now := time.Now()
	leased, err := s.Lease(t.Context(), storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 10, LeaseToken: "tok-1", Now: now})
	if err != nil || len(leased.Deliveries) != 1 {
		t.Fatalf("Lease = %+v, %v", leased, err)
	}
	blocker := connect(t, url)
	exec(t, blocker, "BEGIN")
	exec(t, blocker, `SELECT id FROM inbox WHERE id = 'inbox-1' FOR UPDATE`)

	wantUnavailableSoon(t, "ack of a row", func() error { return s.Ack(context.Background(), "inbox-1", "tok-1", now) })
	exec(t, blocker, "ROLLBACK")
	_, err = retryUnavailable(t, func() (struct{}, error) { return struct{}{}, s.Ack(t.Context(), "inbox-1", "tok-1", now) })
	if err != nil && !errors.Is(err, storage.ErrLeaseLost) {
		t.Fatalf("ack once the lock was released: %v", err)
	}
}

// retryUnavailable calls call until it answers other than ErrUnavailable, as a client retries
// UNAVAILABLE, up to 10 times: with the batches bounded at a second here, one can run out on
// a loaded machine while a new connection replaces the one the abandoned batch lost.
func retryUnavailable[T any](t *testing.T, call func() (T, error)) (T, error) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		v, err := call()
		if !errors.Is(err, storage.ErrUnavailable) || attempt == 10 {
			return v, err
		}
		t.Logf("attempt %d: %v; retrying", attempt, err)
	}
}

// wantUnavailableSoon wants call, what (a claim, an ack) meeting a lock held by a transaction
// that does not end, to fail with ErrUnavailable within ten batch timeouts, not to wait.
func wantUnavailableSoon(t *testing.T, what string, call func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- call() }()
	select {
	case err := <-errc:
		if !errors.Is(err, storage.ErrUnavailable) {
			t.Fatalf("%s locked by a transaction that does not end = %v, want ErrUnavailable", what, err)
		}
	case <-time.After(10 * batchTimeout):
		t.Fatalf("%s locked by another transaction still waits after %s", what, 10*batchTimeout)
	}
}

// storeWithShortBatches opens a store on a fresh database with endpoint ep-1, its batches
// bounded to a second for the test's duration.
func storeWithShortBatches(t *testing.T) (*Store, string) {
	t.Helper()
	saved := batchTimeout
	t.Cleanup(func() { batchTimeout = saved })
	batchTimeout = time.Second
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
		t.Fatal(err)
	}
	return s, url
}

// TestClaimBatchReusedInboxIDFailsOnlyItsClaim: see storagetest.ClaimBatchReusedInboxID. (This
// path failed the later deliveries of the identity with the first one's error.)
func TestClaimBatchReusedInboxIDFailsOnlyItsClaim(t *testing.T) {
	onBothTransactionPaths(t, func(t *testing.T, s *Store) {
		storagetest.ClaimBatchReusedInboxID(t, s, s.commitClaims)
	})
}

// TestSettleDeadLettersAudited: see storagetest.SettleDeadLettersAudited, on both transaction
// paths, since the event is inserted by the settling statement itself.
func TestSettleDeadLettersAudited(t *testing.T) {
	onBothTransactionPaths(t, func(t *testing.T, s *Store) { storagetest.SettleDeadLettersAudited(t, s) })
}
