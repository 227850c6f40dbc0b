package sqlite

import (
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestClaimRetriesABatchThatCouldNotBegin: a claim whose first transaction fails with
// ErrUnavailable (here the write lock held by another process past the busy timeout) is
// tried once more by Claim itself, and accepted when that attempt commits: the caller does not
// see a transient failure that the second attempt settles.
func TestClaimRetriesABatchThatCouldNotBegin(t *testing.T) {
	t.Parallel()
	s, conn := storeBehindAnotherProcessesWriteLock(t)
	// The lock is let go as soon as the first batch has failed, before the retry begins.
	var (
		once     sync.Once
		failures int
		mu       sync.Mutex
	)
	s.ObserveClaimBatches(func(st storage.ClaimBatchStats) {
		if st.Committed {
			return
		}
		mu.Lock()
		failures++
		mu.Unlock()
		once.Do(func() {
			if _, err := conn.ExecContext(t.Context(), "ROLLBACK"); err != nil {
				t.Error(err)
			}
		})
	})
	r, err := s.Claim(t.Context(), evt1Delivery())
	if err != nil || !r.Accepted || r.InboxID != "inbox-1" {
		t.Fatalf("claim whose first attempt met the lock = %+v, %v; want accepted by its second attempt", r, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if failures != 1 {
		t.Fatalf("%d failed batches, want 1 (the first attempt)", failures)
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 1 {
		t.Fatalf("CountDeliveries = %d, %v; want 1", n, err)
	}
}

// TestAcceptedClaimAnswersTheStoredFirstReceipt: the first receipt an accepted claim answers
// is the one stored (microseconds), so the accepted delivery and every later DUPLICATE and
// LookupClaim report the same first_received_at, even when the delivery's ReceivedAt carries
// nanoseconds.
func TestAcceptedClaimAnswersTheStoredFirstReceipt(t *testing.T) {
	t.Parallel()
	s := openAt(t, filepath.Join(t.TempDir(), "hookverify.db"))
	createStripeEndpoint(t, s, "ep-1")
	received := time.Date(2025, time.March, 14, 15, 9, 26, 535897932, time.UTC) // nanoseconds
	d := evt1Delivery()
	d.ReceivedAt = received
	first, err := s.Claim(t.Context(), d)
	if err != nil || !first.Accepted {
		t.Fatalf("first claim = %+v, %v", first, err)
	}
	d.InboxID, d.ReceivedAt = "inbox-2", received.Add(time.Second)
	dup, err := s.Claim(t.Context(), d)
	if err != nil || dup.Accepted {
		t.Fatalf("redelivery = %+v, %v; want duplicate", dup, err)
	}
	looked, err := s.LookupClaim(t.Context(), "ep-1", "evt-1")
	if err != nil {
		t.Fatal(err)
	}
	want := received.Truncate(time.Microsecond)
	for name, got := range map[string]time.Time{"accepted": first.FirstReceivedAt, "duplicate": dup.FirstReceivedAt, "lookup": looked.FirstReceivedAt} {
		if !got.Equal(want) {
			t.Errorf("%s answer's FirstReceivedAt = %v, want the stored %v", name, got, want)
		}
	}
}

// TestClaimWhoseClaimRowFailsStoresNothing: when the claim row cannot be written after the
// inbox record was (here a trigger refuses it), the claim fails and the batch is rolled back:
// no inbox record is left without its claim, which a redelivery would be accepted beside.
func TestClaimWhoseClaimRowFailsStoresNothing(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hookverify.db")
	s := openAt(t, path)
	createStripeEndpoint(t, s, "ep-1")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	if _, err := raw.ExecContext(t.Context(), `CREATE TRIGGER refuse_claims BEFORE INSERT ON claims
		BEGIN SELECT RAISE(ABORT, 'claims refused'); END`); err != nil {
		t.Fatal(err)
	}
	d := evt1Delivery()
	if r, err := s.Claim(t.Context(), d); err == nil {
		t.Fatalf("claim whose claim row was refused = %+v, nil; want an error", r)
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 0 {
		t.Fatalf("CountDeliveries after the failed claim = %d, %v; want 0", n, err)
	}
	if _, err := s.LookupClaim(t.Context(), "ep-1", "evt-1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("LookupClaim after the failed claim = %v, want ErrNotFound", err)
	}
	if _, err := raw.ExecContext(t.Context(), `DROP TRIGGER refuse_claims`); err != nil {
		t.Fatal(err)
	}
	d.InboxID = "inbox-2"
	if r, err := s.Claim(t.Context(), d); err != nil || !r.Accepted {
		t.Fatalf("claim once claims are written again = %+v, %v; want accepted", r, err)
	}
}

// TestClaimOfAReusedInboxIDIsNotRetried: a claim that fails on its own (its inbox id taken
// already, ErrAlreadyExists) is answered at once: only ErrUnavailable, whose outcome a second
// attempt may settle, is tried again, so a permanent failure costs one batch, not two.
func TestClaimOfAReusedInboxIDIsNotRetried(t *testing.T) {
	t.Parallel()
	s := openAt(t, filepath.Join(t.TempDir(), "hookverify.db"))
	createStripeEndpoint(t, s, "ep-1")
	d := evt1Delivery()
	if r, err := s.Claim(t.Context(), d); err != nil || !r.Accepted {
		t.Fatalf("first claim = %+v, %v", r, err)
	}
	var mu sync.Mutex
	batches := 0
	s.ObserveClaimBatches(func(storage.ClaimBatchStats) {
		mu.Lock()
		batches++
		mu.Unlock()
	})
	d.EventID = "evt-2" // a new identity, with the inbox id of the first
	if r, err := s.Claim(t.Context(), d); !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("claim with a reused inbox id = %+v, %v; want ErrAlreadyExists", r, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if batches != 1 {
		t.Fatalf("the claim took %d batches, want 1 (no retry of its own failure)", batches)
	}
}
