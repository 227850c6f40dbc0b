package crdb

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/storage"
)

// deadDelivery claims evt-1 as inbox-1 on s (endpoint ep-1 created) and moves it to the dead
// letters: leased, then nacked on its only attempt with lastError.
func deadDelivery(t *testing.T, s *Store, lastError string) {
	t.Helper()
	if err := s.CreateEndpoint(t.Context(), endpoint("ep-1")); err != nil {
		t.Fatal(err)
	}
	mustClaim(t, s, delivery("evt-1", "inbox-1"), true)
	leased := leaseOne(t, s, "tok-1")
	if dead, err := s.Nack(t.Context(), leased.InboxID, "tok-1", base.Add(time.Minute), 1, lastError, base.Add(time.Minute)); err != nil || !dead {
		t.Fatalf("Nack = %v, %v; want dead", dead, err)
	}
}

// TestSettlingADeadLetterRefusesAnAuditEventWithoutID: Requeue and Discard refuse an audit
// event without id (as without action) with ErrInvalid, and then neither settle the delivery
// nor record anything, as every other audited write does.
func TestSettlingADeadLetterRefusesAnAuditEventWithoutID(t *testing.T) {
	onBothTransactionPaths(t, func(t *testing.T, s *Store) {
		deadDelivery(t, s, "boom")
		for _, ev := range []storage.AuditEvent{
			{Action: "inbox.requeue", At: base.Add(time.Hour)},
			{ID: "a1", At: base.Add(time.Hour)},
		} {
			ctx := storage.WithAuditEvent(t.Context(), ev)
			if err := s.Requeue(ctx, "inbox-1", base.Add(time.Hour)); !errors.Is(err, storage.ErrInvalid) {
				t.Errorf("Requeue with audit event %+v = %v, want ErrInvalid", ev, err)
			}
			if err := s.Discard(ctx, "inbox-1", "discarded: why", base.Add(time.Hour)); !errors.Is(err, storage.ErrInvalid) {
				t.Errorf("Discard with audit event %+v = %v, want ErrInvalid", ev, err)
			}
		}
		dead, _, err := s.ListDeadLetters(t.Context(), storage.InboxFilter{}, storage.DeadLetterKey{}, 10, 0)
		if err != nil || len(dead) != 1 || dead[0].InboxID != "inbox-1" {
			t.Fatalf("dead letters after the refused settles = %+v, %v; want inbox-1", dead, err)
		}
		events, err := s.ListAuditEvents(t.Context(), storage.AuditFilter{Limit: 10})
		if err != nil || len(events) != 0 {
			t.Fatalf("audit events after the refused settles = %+v, %v; want none", events, err)
		}
	})
}

// TestDiscardKeepsTheLastErrorAfterItsReason: a discarded dead letter's last error is the
// reason followed by the error it held ("REASON; last error: ..."), so that what failed is
// not lost when an operator settles it.
func TestDiscardKeepsTheLastErrorAfterItsReason(t *testing.T) {
	onBothTransactionPaths(t, func(t *testing.T, s *Store) {
		deadDelivery(t, s, "exit status 3")
		if err := s.Discard(context.Background(), "inbox-1", "discarded: poison", base.Add(time.Hour)); err != nil {
			t.Fatalf("Discard: %v", err)
		}
		var state, lastError string
		err := s.single(t.Context(), "test", func(ctx context.Context, conn *pgx.Conn) error {
			return conn.QueryRow(ctx, `SELECT state, last_error FROM inbox WHERE id = 'inbox-1'`).Scan(&state, &lastError)
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := "discarded: poison; last error: exit status 3"; state != storage.StateAcked || lastError != want {
			t.Fatalf("discarded delivery: state %q, last error %q; want %q, %q", state, lastError, storage.StateAcked, want)
		}
	})
}
