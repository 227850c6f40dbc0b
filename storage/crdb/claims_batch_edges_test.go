package crdb

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestClaimAnswersTheFirstReceivedTimeAsStored: the first_received_at of an accepted claim is
// the one the store keeps (microseconds), the same a redelivery of the event is answered, so
// that the edge hears one time for one event, on both transaction paths.
func TestClaimAnswersTheFirstReceivedTimeAsStored(t *testing.T) {
	onBothTransactionPathsWithEndpoint(t, func(t *testing.T, s *Store) {
		d := delivery("evt-ns", "inbox-ns")
		d.ReceivedAt = base.Add(789 * time.Nanosecond)
		first, err := s.Claim(t.Context(), d)
		if err != nil || !first.Accepted {
			t.Fatalf("Claim = %+v, %v; want accepted", first, err)
		}
		again, err := s.Claim(t.Context(), delivery("evt-ns", "inbox-ns2"))
		if err != nil || again.Accepted {
			t.Fatalf("redelivery = %+v, %v; want a duplicate", again, err)
		}
		stored, err := s.GetDelivery(t.Context(), "inbox-ns")
		if err != nil {
			t.Fatal(err)
		}
		if !first.FirstReceivedAt.Equal(stored.ReceivedAt) || !first.FirstReceivedAt.Equal(again.FirstReceivedAt) {
			t.Fatalf("accepted claim answered first received at %v; stored %v, redelivery answered %v",
				first.FirstReceivedAt, stored.ReceivedAt, again.FirstReceivedAt)
		}
	})
}

// TestClaimBatchWithAReusedInboxIDKeepsTheOthersAnswers: a batch whose inbox id reuse sends it
// one claim per savepoint still answers each other claim as it would alone: a retry of a claim
// already made with the same inbox id accepted, and an event with an empty (nil) body stored
// with its empty body, not failing the whole batch.
func TestClaimBatchWithAReusedInboxIDKeepsTheOthersAnswers(t *testing.T) {
	onBothTransactionPathsWithEndpoint(t, func(t *testing.T, s *Store) {
		mustClaim(t, s, delivery("evt-a", "inbox-a"), true)
		mustClaim(t, s, delivery("evt-b", "inbox-b"), true)

		empty := delivery("evt-empty", "inbox-empty")
		empty.Body = nil
		batch := []storage.Delivery{
			delivery("evt-a", "inbox-a"), // a retry of a claim that went through
			delivery("evt-c", "inbox-b"), // another event reusing an inbox id
			empty,
		}
		results, errs, err := s.commitClaims(batch)
		if err != nil {
			t.Fatalf("commitClaims: %v", err)
		}
		if !errors.Is(errs[1], storage.ErrAlreadyExists) {
			t.Fatalf("claim reusing an inbox id: %+v, %v; want ErrAlreadyExists", results[1], errs[1])
		}
		for _, i := range []int{0, 2} {
			if errs[i] != nil || !results[i].Accepted || results[i].InboxID != batch[i].InboxID {
				t.Fatalf("claim %d (%s) beside the reused inbox id = %+v, %v; want accepted", i, batch[i].InboxID, results[i], errs[i])
			}
		}
		got, err := s.GetDelivery(t.Context(), "inbox-empty")
		if err != nil {
			t.Fatalf("GetDelivery of the empty body: %v", err)
		}
		if got.Body == nil || !bytes.Equal(got.Body, []byte{}) {
			t.Fatalf("empty body stored as %#v", got.Body)
		}
	})
}

// TestRedeliveriesInOneClaimBatchStoreTheEventOnce: deliveries of one new event that meet in a
// batch (a provider's redelivery racing its first delivery) store the event once, under the
// first one's inbox id; the later ones are duplicates of it, so a worker runs it once.
func TestRedeliveriesInOneClaimBatchStoreTheEventOnce(t *testing.T) {
	onBothTransactionPathsWithEndpoint(t, func(t *testing.T, s *Store) {
		batch := []storage.Delivery{delivery("evt-x", "inbox-1"), delivery("evt-x", "inbox-2"), delivery("evt-x", "inbox-3")}
		results, errs, err := s.commitClaims(batch)
		if err != nil {
			t.Fatalf("commitClaims: %v", err)
		}
		for i := range batch {
			if errs[i] != nil {
				t.Fatalf("claim %d (%s): %v", i, batch[i].InboxID, errs[i])
			}
			if r := results[i]; r.Accepted != (i == 0) || r.InboxID != "inbox-1" || r.OperationKey != "op-inbox-1" {
				t.Errorf("claim %d (%s) = %+v, want accepted %v, held by inbox-1", i, batch[i].InboxID, r, i == 0)
			}
		}
		wantCount(t, s, 1)
	})
}

// TestConflictWhileClaimingOneByOneIsRetried: in the one-claim-per-savepoint path (after a
// reused inbox id), a serialization failure of one claim is a conflict of the batch's
// transaction, which runs again, not that claim's own failure: the claim is accepted, not
// answered UNAVAILABLE (only a unique violation fails a claim alone).
func TestConflictWhileClaimingOneByOneIsRetried(t *testing.T) {
	onBothTransactionPathsAt(t, func(t *testing.T, s *Store, url string) {
		if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
			t.Fatal(err)
		}
		mustClaim(t, s, delivery("evt-b", "inbox-b"), true)
		// The first one-row insert of evt-z fails once with a serialization failure; the
		// batch's multi-row statement (which unnests its arrays) is left alone.
		conn := connect(t, url)
		exec(t, conn, `CREATE SEQUENCE conflict_once`)
		exec(t, conn, `CREATE FUNCTION conflict_once() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				IF NEW.event_id = 'evt-z' AND current_query() NOT LIKE '%unnest%' AND nextval('conflict_once') = 1 THEN
					RAISE EXCEPTION 'injected conflict' USING ERRCODE = '40001';
				END IF;
				RETURN NEW;
			END $$`)
		exec(t, conn, `CREATE TRIGGER conflict_once BEFORE INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION conflict_once()`)

		batch := []storage.Delivery{delivery("evt-c", "inbox-b"), delivery("evt-z", "inbox-z")}
		results, errs, err := s.commitClaims(batch)
		if err != nil {
			t.Fatalf("commitClaims: %v", err)
		}
		if !errors.Is(errs[0], storage.ErrAlreadyExists) {
			t.Fatalf("claim reusing an inbox id: %+v, %v; want ErrAlreadyExists", results[0], errs[0])
		}
		if errs[1] != nil || !results[1].Accepted {
			t.Fatalf("claim that met a conflict = %+v, %v; want accepted once its transaction ran again", results[1], errs[1])
		}
		var fired int64
		if err := conn.QueryRow(t.Context(), `SELECT last_value FROM conflict_once`).Scan(&fired); err != nil || fired < 2 {
			t.Fatalf("the injected conflict did not fire before the claim went through: %d, %v", fired, err)
		}
		wantCount(t, s, 2)
	})
}
