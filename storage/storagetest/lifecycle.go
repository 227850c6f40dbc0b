package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

func testDurability(t *testing.T, h harness) {
	t.Run("rows survive close and reopen", func(t *testing.T) {
		open := h.reopenable(t)
		s := open(t)
		e := newEndpoint("ep-1")
		createEndpoint(t, s, e)
		sec := newSecret("ep-1", "sec-1", at(0))
		sec.Sealed = allBytes()
		addSecret(t, s, sec)
		first := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
		first.Body = []byte("body\x00\xff")
		claim(t, s, first)
		must(t, s.Close(), "Close")

		s = open(t)
		got, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint after reopen")
		wantSame(t, e, got, "endpoint after reopen")
		wantSame(t, []storage.Secret{sec}, listSecrets(t, s, "ep-1"), "secrets after reopen")
		wantSame(t, first, getDelivery(t, s, "inbox-1"), "delivery after reopen")
		wantCount(t, s, "", 1)

		dup := newDelivery("ep-1", "ep-1", "evt-1", "inbox-2")
		wantSame(t, rejectedFor(first), claim(t, s, dup), "duplicate claim after reopen")
		// A process that crashed after committing retries with its inbox id after restart.
		wantSame(t, acceptedBy(first), claim(t, s, first), "retried claim after reopen")
		wantCount(t, s, "", 1)
		wantNoDelivery(t, s, "inbox-2")
	})

	t.Run("handles on one database see each other's claims", func(t *testing.T) {
		open := h.reopenable(t)
		a, b := open(t), open(t)
		createEndpoint(t, a, newEndpoint("ep-1"))
		first := newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")
		wantSame(t, acceptedBy(first), claim(t, a, first), "claim through the first handle")
		dup := newDelivery("ep-1", "ep-1", "evt-1", "inbox-2")
		wantSame(t, rejectedFor(first), claim(t, b, dup), "duplicate through the second handle")

		// Closing one handle leaves the other working.
		must(t, a.Close(), "Close first handle")
		wantSame(t, first, getDelivery(t, b, "inbox-1"), "delivery through the second handle")
	})
}

// closedCalls calls every Store method with valid arguments, so that only closure can make
// them fail.
func closedCalls(ctx context.Context, s storage.Store) map[string]error {
	calls := map[string]error{}
	calls["CreateEndpoint"] = s.CreateEndpoint(ctx, newEndpoint("ep-2"))
	_, calls["GetEndpoint"] = s.GetEndpoint(ctx, "ep-1")
	_, calls["ListEndpoints"] = s.ListEndpoints(ctx)
	_, calls["ListEndpointsPage"] = s.ListEndpointsPage(ctx, "", 10)
	calls["UpdateEndpoint"] = s.UpdateEndpoint(ctx, newEndpoint("ep-1"))
	_, calls["ModifyEndpoint"] = s.ModifyEndpoint(ctx, "ep-1", func(e storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
		return e, "", nil
	})
	calls["AddSecret"] = s.AddSecret(ctx, newSecret("ep-1", "sec-2", at(0)), nil)
	_, calls["RotateSecret"] = s.RotateSecret(ctx, newSecret("ep-1", "sec-3", at(0)), at(time.Hour), nil)
	_, calls["RetireSecret"] = s.RetireSecret(ctx, "ep-1", "sec-1", at(time.Hour))
	_, calls["ListSecrets"] = s.ListSecrets(ctx, "ep-1")
	calls["MarkSecretsUsed"] = s.MarkSecretsUsed(ctx, []storage.SecretUse{{EndpointID: "ep-1", SecretID: "sec-1", At: at(time.Hour)}})
	_, calls["ResealSecret"] = s.ResealSecret(ctx, "ep-1", "sec-1", "master-1", "master-2", []byte("x"))
	_, calls["ListAuditEvents"] = s.ListAuditEvents(ctx, storage.AuditFilter{Limit: 10})
	_, calls["Claim"] = s.Claim(ctx, newDelivery("ep-1", "ep-1", "evt-2", "inbox-2"))
	_, calls["LookupClaim"] = s.LookupClaim(ctx, "ep-1", "evt-1")
	_, calls["GetDelivery"] = s.GetDelivery(ctx, "inbox-1")
	_, calls["CountDeliveries"] = s.CountDeliveries(ctx, "")
	_, calls["Lease"] = s.Lease(ctx, storage.LeaseRequest{Max: 1, Visibility: time.Minute, MaxAttempts: 1,
		LeaseToken: "tok", Now: at(time.Hour)})
	calls["Ack"] = s.Ack(ctx, "inbox-1", "tok", at(time.Hour))
	_, calls["Nack"] = s.Nack(ctx, "inbox-1", "tok", at(time.Hour), 1, "failed", at(time.Hour))
	calls["GiveBack"] = s.GiveBack(ctx, "inbox-1", "tok", at(time.Hour), "stopping", at(time.Hour))
	calls["AckMany"] = oneError(s.AckMany(ctx, []storage.LeaseRef{{InboxID: "inbox-1", LeaseToken: "tok"}}, at(time.Hour)))
	_, calls["DeadLetterExhausted"] = s.DeadLetterExhausted(ctx, storage.ExhaustedRequest{MaxAttempts: 1, Reason: "closed", Batch: 10, Now: at(time.Hour)})
	_, calls["ExtendLease"] = s.ExtendLease(ctx, storage.ExtendRequest{LeaseRef: storage.LeaseRef{InboxID: "inbox-1", LeaseToken: "tok"}, Visibility: time.Hour, Now: at(time.Hour)})
	_, _, calls["ListDeadLetters"] = s.ListDeadLetters(ctx, storage.InboxFilter{}, storage.DeadLetterKey{}, 10, 0)
	calls["Requeue"] = s.Requeue(ctx, "inbox-1", at(time.Hour))
	calls["Discard"] = s.Discard(ctx, "inbox-1", "discarded: closed", at(time.Hour))
	_, calls["InboxStats"] = s.InboxStats(ctx)
	_, calls["DeliveryEndpoints"] = s.DeliveryEndpoints(ctx, []string{"inbox-1"})
	_, calls["Sweep"] = s.Sweep(ctx, storage.SweepRequest{AckedBefore: at(time.Hour), ClaimsBefore: at(time.Hour), Batch: 10})
	calls["CreateToken"] = s.CreateToken(ctx, newToken("tok-2", "ci", at(0)))
	_, calls["TokenByHash"] = s.TokenByHash(ctx, tokenHash("tok-1"))
	_, calls["ListTokens"] = s.ListTokens(ctx)
	_, calls["RevokeToken"] = s.RevokeToken(ctx, "tok-1", at(time.Hour))
	calls["TouchToken"] = s.TouchToken(ctx, "tok-1", at(time.Hour))
	calls["Migrate"] = s.Migrate(ctx)
	calls["Ping"] = s.Ping(ctx)
	return calls
}

// oneError is the error of an AckMany of one ack, or one saying it answered otherwise.
func oneError(errs []error) error {
	if len(errs) != 1 {
		return fmt.Errorf("AckMany of one ack answered %d errors", len(errs))
	}
	return errs[0]
}

func testClosed(t *testing.T, h harness) {
	t.Run("every method returns ErrClosed after Close", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		addSecret(t, s, newSecret("ep-1", "sec-1", at(0)))
		claim(t, s, newDelivery("ep-1", "ep-1", "evt-1", "inbox-1"))
		must(t, s.Close(), "Close")
		for name, err := range closedCalls(t.Context(), s) {
			if !errors.Is(err, storage.ErrClosed) {
				t.Errorf("%s after Close: got error %v, want one wrapping %v", name, err, storage.ErrClosed)
			}
		}
	})

	t.Run("closing twice is harmless", func(t *testing.T) {
		s := h.fresh(t)
		must(t, s.Close(), "first Close")
		// The contract makes every later call return ErrClosed; nil is as harmless.
		if err := s.Close(); err != nil && !errors.Is(err, storage.ErrClosed) {
			t.Fatalf("second Close: got %v, want nil or ErrClosed", err)
		}
		wantErr(t, s.Ping(t.Context()), storage.ErrClosed, "Ping after two Closes")
	})

	t.Run("a closed handle does not close the database", func(t *testing.T) {
		open := h.reopenable(t)
		s := open(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		must(t, s.Close(), "Close")
		s = open(t)
		must(t, s.Ping(t.Context()), "Ping on a new handle")
		if _, err := s.GetEndpoint(t.Context(), "ep-1"); err != nil {
			t.Fatalf("GetEndpoint on a new handle: %v", err)
		}
	})
}

func testMigrate(t *testing.T, h harness) {
	t.Run("running again on a migrated store succeeds and keeps rows", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		claim(t, s, newDelivery("ep-1", "ep-1", "evt-1", "inbox-1"))
		for i := range 3 {
			must(t, s.Migrate(t.Context()), fmt.Sprintf("Migrate #%d", i+1))
		}
		if _, err := s.GetEndpoint(t.Context(), "ep-1"); err != nil {
			t.Fatalf("GetEndpoint after Migrate: %v", err)
		}
		wantCount(t, s, "", 1)
	})

	t.Run("concurrent runs from several handles succeed", func(t *testing.T) {
		open := h.reopenable(t)
		stores := []storage.Store{open(t), open(t), open(t)}
		const perStore = 3
		errs := make([]error, len(stores)*perStore)
		race(len(errs), func(i int) {
			errs[i] = stores[i%len(stores)].Migrate(t.Context())
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("Migrate #%d: %v", i, err)
			}
		}
		createEndpoint(t, stores[0], newEndpoint("ep-1"))
		wantSame(t, acceptedBy(newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")),
			claim(t, stores[1], newDelivery("ep-1", "ep-1", "evt-1", "inbox-1")), "claim after migrations")
	})
}

func testPing(t *testing.T, h harness) {
	t.Run("succeeds on an open store", func(t *testing.T) {
		s := h.fresh(t)
		must(t, s.Ping(t.Context()), "Ping")
	})
}
