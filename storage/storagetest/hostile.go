package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// testInboxHostileInput checks the inbox calls with arguments no stored row can match: ids and
// lease tokens holding NUL, which the API's strings allow (valid UTF-8) but PostgreSQL's text
// refuses. Such a call is answered as for any id or token that matches nothing, and never
// fails the calls that share its commit.
func testInboxHostileInput(t *testing.T, h harness) {
	t0 := at(time.Hour)

	t.Run("an ack naming an impossible id or token fails alone, as one that matches nothing", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		deliver(t, s, "ep-1", "ep-1", "d2", at(2*time.Second))
		wantIDs(t, lease(t, s, leaseReq("tok-1", t0, 2)), "lease", "d1", "d2")

		errs := s.AckMany(t.Context(), []storage.LeaseRef{
			{InboxID: "d1", LeaseToken: "tok-1"},
			{InboxID: "d2", LeaseToken: "tok-1\x00"},
			{InboxID: "d\x002", LeaseToken: "tok-1"},
		}, t0)
		if len(errs) != 3 {
			t.Fatalf("AckMany of 3 answered %d", len(errs))
		}
		must(t, errs[0], "the valid ack of an AckMany with impossible ones")
		wantErr(t, errs[1], storage.ErrLeaseLost, "an ack with a token holding NUL")
		wantErr(t, errs[2], storage.ErrNotFound, "an ack of an id holding NUL")

		wantErr(t, s.Ack(t.Context(), "d2", "\x00", t0), storage.ErrLeaseLost, "Ack with a token holding NUL")
		wantErr(t, s.Ack(t.Context(), "\x00", "tok-1", t0), storage.ErrNotFound, "Ack of an id holding NUL")
		_, err := s.Nack(t.Context(), "d2", "tok\x00", t0, 3, "", t0)
		wantErr(t, err, storage.ErrLeaseLost, "Nack with a token holding NUL")
		_, err = s.Nack(t.Context(), "d\x00", "tok-1", t0, 3, "", t0)
		wantErr(t, err, storage.ErrNotFound, "Nack of an id holding NUL")
		wantErr(t, extendTo(t, s, "d2", "tok\x00", t0.Add(time.Hour), t0), storage.ErrLeaseLost,
			"ExtendLease with a token holding NUL")
		wantErr(t, extendTo(t, s, "d\x00", "tok-1", t0.Add(time.Hour), t0), storage.ErrNotFound,
			"ExtendLease of an id holding NUL")
		wantErr(t, s.Requeue(t.Context(), "d\x00", t0), storage.ErrNotFound, "Requeue of an id holding NUL")
		got, err := s.DeliveryEndpoints(t.Context(), []string{"d2", "d\x002"})
		must(t, err, "DeliveryEndpoints with an id holding NUL")
		wantSame(t, map[string]string{"d2": "ep-1"}, got, "DeliveryEndpoints with an id holding NUL")

		// The lease of d2 was untouched by all that.
		ack(t, s, "d2", "tok-1", t0)
		wantStats(t, s, "stats after the acks")
	})

	t.Run("a lease filtered by an impossible endpoint or scope leases nothing of it", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		for _, f := range []storage.InboxFilter{
			{EndpointIDs: []string{"ep\x00"}},
			{Scopes: []string{"ep-1\x00"}},
			{EndpointIDs: []string{"ep-2", "ep\x00"}},
		} {
			req := leaseReq("tok-1", t0, 10)
			req.InboxFilter = f
			wantIDs(t, lease(t, s, req), "lease filtered by "+describeFilter(f))
			list, _, err := s.ListDeadLetters(t.Context(), f, storage.DeadLetterKey{}, 10, 0)
			must(t, err, "ListDeadLetters filtered by "+describeFilter(f))
			wantIDs(t, list, "dead letters filtered by "+describeFilter(f))
		}
		// The same filter with a real endpoint beside it still leases that endpoint's.
		req := leaseReq("tok-2", t0, 10)
		req.EndpointIDs = []string{"ep\x00", "ep-1"}
		wantIDs(t, lease(t, s, req), "lease filtered by an impossible endpoint and ep-1", "d1")
	})

	t.Run("a lease filtered by many endpoints and scopes works", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		req := leaseReq("tok-1", t0, 10)
		req.EndpointIDs = append(manyEndpoints(40000), "ep-1")
		req.Scopes = append(manyEndpoints(40000), "ep-1")
		wantIDs(t, lease(t, s, req), "lease filtered by 40,001 endpoints and scopes", "d1")
		list, _, err := s.ListDeadLetters(t.Context(), req.InboxFilter, storage.DeadLetterKey{}, 10, 0)
		must(t, err, "ListDeadLetters filtered by 40,001 endpoints and scopes")
		wantIDs(t, list, "dead letters filtered by 40,001 endpoints")
	})

	t.Run("a give-back naming an impossible id or token fails, and its error holding NUL is kept", func(t *testing.T) {
		testGiveBackHostileInput(t, h)
	})

	t.Run("a nack's error holding NUL is kept, NUL replaced", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
		lease(t, s, leaseReq("tok-1", t0, 1))
		dead, err := s.Nack(t.Context(), "d1", "tok-1", t0, 1, "exit status 1: \x00binary\x00", t0)
		must(t, err, "Nack with an error holding NUL")
		if !dead {
			t.Fatal("Nack at the last attempt did not report dead")
		}
		list := deadLetters(t, s, storage.InboxFilter{}, 10)
		if len(list) != 1 || list[0].LastError != "exit status 1: \uFFFDbinary\uFFFD" {
			t.Fatalf("dead letters after a nack whose error held NUL: %+v", list)
		}
	})
}

func describeFilter(f storage.InboxFilter) string {
	return fmt.Sprintf("endpoints %q, scopes %q", f.EndpointIDs, f.Scopes)
}

// testAdminHostileInput checks the admin and claim lookups with ids holding NUL, which the
// API's strings allow but PostgreSQL's text refuses: such an id names nothing, as any unknown
// id, on every backend (PostgreSQL answered INVALID_ARGUMENT where SQLite answered NOT_FOUND).
func testAdminHostileInput(t *testing.T, h harness) {
	s := h.fresh(t)
	createEndpoint(t, s, newEndpoint("ep-1"))
	addSecret(t, s, newSecret("ep-1", "sec-1", at(time.Second)))
	_, err := s.GetEndpoint(t.Context(), "ep-1\x00")
	wantErr(t, err, storage.ErrNotFound, "GetEndpoint of an id holding NUL")
	_, err = s.ModifyEndpoint(t.Context(), "ep-1\x00", func(e storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
		t.Error("ModifyEndpoint called its change for an id holding NUL")
		return e, "", nil
	})
	wantErr(t, err, storage.ErrNotFound, "ModifyEndpoint of an id holding NUL")
	_, err = s.RetireSecret(t.Context(), "ep-1", "sec-1\x00", at(time.Hour))
	wantErr(t, err, storage.ErrNotFound, "RetireSecret of a secret id holding NUL")
	_, err = s.RetireSecret(t.Context(), "ep-1\x00", "sec-1", at(time.Hour))
	wantErr(t, err, storage.ErrNotFound, "RetireSecret of an endpoint id holding NUL")
	list, err := s.ListSecrets(t.Context(), "ep-1\x00")
	must(t, err, "ListSecrets of an endpoint id holding NUL")
	if len(list) != 0 {
		t.Errorf("ListSecrets of an endpoint id holding NUL = %d secrets, want none", len(list))
	}
	_, err = s.RevokeToken(t.Context(), "tok\x00", at(time.Hour))
	wantErr(t, err, storage.ErrNotFound, "RevokeToken of an id holding NUL")
	events, err := s.ListAuditEvents(t.Context(), storage.AuditFilter{EndpointID: "ep-1\x00", Limit: 10})
	must(t, err, "ListAuditEvents filtered by an endpoint id holding NUL")
	if len(events) != 0 {
		t.Errorf("ListAuditEvents filtered by an endpoint id holding NUL = %d events, want none", len(events))
	}
	for _, ids := range [][2]string{{"ep-1", "sec-1\x00"}, {"ep-1\x00", "sec-1"}} {
		_, err = s.ResealSecret(t.Context(), ids[0], ids[1], "master-1", "master-2", []byte("resealed"))
		wantErr(t, err, storage.ErrNotFound, fmt.Sprintf("ResealSecret(%q, %q)", ids[0], ids[1]))
	}

	d := newDelivery("ep-1", "scope-1", "evt-1", "d1")
	claim(t, s, d)
	for _, key := range [][2]string{{"scope-1\x00", "evt-1"}, {"scope-1", "evt-1\x00"}} {
		_, err = s.LookupClaim(t.Context(), key[0], key[1])
		wantErr(t, err, storage.ErrNotFound, fmt.Sprintf("LookupClaim(%q, %q)", key[0], key[1]))
	}
	_, err = s.GetDelivery(t.Context(), "d1\x00")
	wantErr(t, err, storage.ErrNotFound, "GetDelivery of an id holding NUL")
	wantCount(t, s, "scope-1\x00", 0)

	// The real ones are untouched.
	if got, err := s.ListSecrets(t.Context(), "ep-1"); err != nil || len(got) != 1 || !got[0].RetiredAt.IsZero() || got[0].KeyID != "master-1" {
		t.Errorf("ListSecrets(ep-1) after the hostile calls = %+v, %v; want sec-1, not retired, under master-1", got, err)
	}
	if got, err := s.LookupClaim(t.Context(), "scope-1", "evt-1"); err != nil || got != rejectedFor(d) {
		t.Errorf("LookupClaim(scope-1, evt-1) after the hostile calls = %+v, %v; want %+v", got, err, rejectedFor(d))
	}
	wantCount(t, s, "scope-1", 1)
}

// testGiveBackHostileInput is testInboxHostileInput's case for GiveBack, which the API's Nack
// with not_attempted reaches with the caller's id, token and error as they came.
func testGiveBackHostileInput(t *testing.T, h harness) {
	t0 := at(time.Hour)
	s := inboxFixture(t, h)
	deliver(t, s, "ep-1", "ep-1", "d1", at(time.Second))
	wantIDs(t, lease(t, s, leaseReq("tok-1", t0, 1)), "lease", "d1")
	wantErr(t, s.GiveBack(t.Context(), "d1", "tok-1\x00", t0, "", t0), storage.ErrLeaseLost, "GiveBack with a token holding NUL")
	wantErr(t, s.GiveBack(t.Context(), "d\x001", "tok-1", t0, "", t0), storage.ErrNotFound, "GiveBack of an id holding NUL")
	must(t, s.GiveBack(t.Context(), "d1", "tok-1", t0, "stopping: \x00", t0), "GiveBack with an error holding NUL")
	got := lease(t, s, leaseReq("tok-2", t0, 1))
	if len(got) != 1 || got[0].LastError != "stopping: \uFFFD" || got[0].Attempts != 1 {
		t.Fatalf("lease after a give-back whose error held NUL: %+v", got)
	}
}
