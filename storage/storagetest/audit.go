package storagetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

func auditEvent(id, action, endpointID, secretID string, when time.Time) storage.AuditEvent {
	return storage.AuditEvent{ID: id, At: when, Actor: "token:tok_admin", Action: action,
		EndpointID: endpointID, SecretID: secretID, Detail: "detail of " + id + " ü"}
}

func listAudit(t *testing.T, s storage.Store, f storage.AuditFilter) []storage.AuditEvent {
	t.Helper()
	got, err := s.ListAuditEvents(t.Context(), f)
	must(t, err, "ListAuditEvents")
	return got
}

func testAudit(t *testing.T, h harness) {
	t.Run("every administrative write records the event its context carries", func(t *testing.T) {
		s := h.fresh(t)
		with := func(ev storage.AuditEvent) context.Context { return storage.WithAuditEvent(t.Context(), ev) }
		events := []storage.AuditEvent{
			auditEvent("a1", "endpoint.create", "ep-1", "", at(1*time.Second)),
			auditEvent("a2", "endpoint.update", "ep-1", "", at(2*time.Second)),
			auditEvent("a3", "secret.add", "ep-1", "sec-1", at(3*time.Second)),
			auditEvent("a4", "secret.rotate", "ep-1", "sec-2", at(4*time.Second)),
			auditEvent("a5", "secret.retire", "ep-1", "sec-1", at(5*time.Second)),
			auditEvent("a6", "secret.reseal", "ep-1", "sec-2", at(6*time.Second)),
			auditEvent("a7", "token.create", "", "", at(7*time.Second)),
			auditEvent("a8", "token.revoke", "", "", at(8*time.Second)),
		}
		must(t, s.CreateEndpoint(with(events[0]), newEndpoint("ep-1")), "CreateEndpoint")
		must(t, s.UpdateEndpoint(with(events[1]), newEndpoint("ep-1")), "UpdateEndpoint")
		must(t, s.AddSecret(with(events[2]), newSecret("ep-1", "sec-1", at(0)), nil), "AddSecret")
		_, err := s.RotateSecret(with(events[3]), newSecret("ep-1", "sec-2", at(time.Second)), at(time.Hour), nil)
		must(t, err, "RotateSecret")
		_, err = s.RetireSecret(with(events[4]), "ep-1", "sec-1", at(time.Minute))
		must(t, err, "RetireSecret")
		_, err = s.ResealSecret(with(events[5]), "ep-1", "sec-2", "master-1", "master-2", []byte("x"))
		must(t, err, "ResealSecret")
		must(t, s.CreateToken(with(events[6]), storage.Token{ID: "tok-1", Name: "edge", Hash: []byte("hash-1"),
			Scopes: []string{"verify:ep-1"}, CreatedAt: at(0)}), "CreateToken")
		_, err = s.RevokeToken(with(events[7]), "tok-1", at(time.Hour))
		must(t, err, "RevokeToken")
		// Writes without an event record nothing.
		createEndpoint(t, s, newEndpoint("ep-2"))
		// A rotation's record names the secrets it ended early, so that the trail shows every
		// secret whose validity changed.
		events[3].Detail += "; ended: sec-1"
		wantSame(t, events, listAudit(t, s, storage.AuditFilter{Limit: 100}), "audit events")
	})

	t.Run("a failed change records nothing", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		ctx := storage.WithAuditEvent(t.Context(), auditEvent("a1", "endpoint.create", "ep-1", "", at(0)))
		wantErr(t, s.CreateEndpoint(ctx, newEndpoint("ep-1")), storage.ErrAlreadyExists, "CreateEndpoint of a taken id")
		ctx = storage.WithAuditEvent(t.Context(), auditEvent("a2", "secret.add", "ep-9", "sec-1", at(0)))
		wantErr(t, s.AddSecret(ctx, newSecret("ep-9", "sec-1", at(0)), nil), storage.ErrNotFound, "AddSecret to an unknown endpoint")
		ctx = storage.WithAuditEvent(t.Context(), auditEvent("a3", "secret.retire", "ep-1", "sec-9", at(0)))
		_, err := s.RetireSecret(ctx, "ep-1", "sec-9", at(time.Hour))
		wantErr(t, err, storage.ErrNotFound, "RetireSecret of an unknown secret")
		if got := listAudit(t, s, storage.AuditFilter{Limit: 10}); len(got) != 0 {
			t.Fatalf("audit events after failed changes: %+v", got)
		}
	})

	t.Run("revoking a revoked token changes nothing and records nothing", func(t *testing.T) {
		s := h.fresh(t)
		must(t, s.CreateToken(t.Context(), storage.Token{ID: "tok-1", Name: "edge", Hash: []byte("hash-1"),
			Scopes: []string{"verify:ep-1"}, CreatedAt: at(0)}), "CreateToken")
		first := auditEvent("a1", "token.revoke", "", "", at(time.Second))
		_, err := s.RevokeToken(storage.WithAuditEvent(t.Context(), first), "tok-1", at(time.Second))
		must(t, err, "RevokeToken")
		again := auditEvent("a2", "token.revoke", "", "", at(time.Minute))
		_, err = s.RevokeToken(storage.WithAuditEvent(t.Context(), again), "tok-1", at(time.Minute))
		must(t, err, "second RevokeToken")
		wantSame(t, []storage.AuditEvent{first}, listAudit(t, s, storage.AuditFilter{Limit: 10}), "audit events")
	})

	t.Run("a write that changes nothing records nothing", func(t *testing.T) { testUnchangedWritesRecordNothing(t, h) })

	t.Run("a change whose event cannot be recorded does not happen", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		addSecret(t, s, newSecret("ep-1", "sec-1", at(0)))
		ctx := storage.WithAuditEvent(t.Context(), auditEvent("a1", "secret.add", "ep-1", "sec-2", at(time.Second)))
		must(t, s.AddSecret(ctx, newSecret("ep-1", "sec-2", at(time.Second)), nil), "AddSecret")
		// The same event id again: the record fails, so the retirement must roll back.
		ctx = storage.WithAuditEvent(t.Context(), auditEvent("a1", "secret.retire", "ep-1", "sec-1", at(2*time.Second)))
		if _, err := s.RetireSecret(ctx, "ep-1", "sec-1", at(time.Hour)); err == nil {
			t.Fatal("RetireSecret succeeded although its audit event could not be recorded")
		}
		for _, sec := range listSecrets(t, s, "ep-1") {
			if !sec.RetiredAt.IsZero() {
				t.Fatalf("secret %s retired without an audit record", sec.ID)
			}
		}
	})

	t.Run("filters by endpoint and time, oldest first, up to the limit", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		var all []storage.AuditEvent
		for i, ep := range []string{"ep-1", "ep-2", "ep-1", "ep-2", "ep-1"} {
			ev := auditEvent("a"+string(rune('1'+i)), "endpoint.update", ep, "", at(time.Duration(i)*time.Minute))
			must(t, s.UpdateEndpoint(storage.WithAuditEvent(t.Context(), ev), newEndpoint(ep)), "UpdateEndpoint")
			all = append(all, ev)
		}
		wantSame(t, all, listAudit(t, s, storage.AuditFilter{Limit: 10}), "all events")
		wantSame(t, []storage.AuditEvent{all[0], all[2], all[4]},
			listAudit(t, s, storage.AuditFilter{EndpointID: "ep-1", Limit: 10}), "events of ep-1")
		wantSame(t, []storage.AuditEvent{all[1], all[2]},
			listAudit(t, s, storage.AuditFilter{Since: at(time.Minute), Until: at(3 * time.Minute), Limit: 10}),
			"events from minute 1 up to minute 3")
		wantSame(t, []storage.AuditEvent{all[2], all[4]},
			listAudit(t, s, storage.AuditFilter{EndpointID: "ep-1", Since: at(2 * time.Minute), Limit: 10}),
			"events of ep-1 since minute 2")
		wantSame(t, all[:2], listAudit(t, s, storage.AuditFilter{Limit: 2}), "first two events")
		_, err := s.ListAuditEvents(t.Context(), storage.AuditFilter{})
		wantErr(t, err, storage.ErrInvalid, "ListAuditEvents without a limit")
	})

	t.Run("pages go on after the key, through events sharing a time, in the byte order of ids", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		createEndpoint(t, s, newEndpoint("ep-2"))
		// Most at one instant, with ids a collation would order otherwise than bytes do.
		var all []storage.AuditEvent
		for i, id := range []string{"b", "A-b", "a.B", "a_c", "B", "a", "a-c", "_x", "9", "z"} {
			when, ep := at(time.Minute), "ep-1"
			switch {
			case i == 0:
				when = at(0)
			case i >= 8:
				when = at(2 * time.Minute)
			}
			if i%2 == 1 {
				ep = "ep-2"
			}
			ev := auditEvent(id, "endpoint.update", ep, "", when)
			must(t, s.UpdateEndpoint(storage.WithAuditEvent(t.Context(), ev), newEndpoint(ep)), "UpdateEndpoint")
			all = append(all, ev)
		}
		slices.SortFunc(all, func(a, b storage.AuditEvent) int {
			return cmp.Or(a.At.Compare(b.At), strings.Compare(a.ID, b.ID))
		})
		wantSame(t, all, listAudit(t, s, storage.AuditFilter{Limit: 100}), "all events in (time, id bytes) order")
		follow := func(f storage.AuditFilter) []storage.AuditEvent {
			t.Helper()
			var got []storage.AuditEvent
			for pages := 0; ; pages++ {
				if pages > len(all)+1 {
					t.Fatalf("filter %+v: pages did not end", f)
				}
				page := listAudit(t, s, f)
				got = append(got, page...)
				if len(page) < f.Limit {
					return got
				}
				f.After = storage.AuditKeyOf(page[len(page)-1])
			}
		}
		for _, limit := range []int{1, 2, 3, len(all)} {
			wantSame(t, all, follow(storage.AuditFilter{Limit: limit}), fmt.Sprintf("events by pages of %d", limit))
			var ofEP2 []storage.AuditEvent
			for _, ev := range all {
				if ev.EndpointID == "ep-2" && ev.At.Before(at(2*time.Minute)) {
					ofEP2 = append(ofEP2, ev)
				}
			}
			wantSame(t, ofEP2, follow(storage.AuditFilter{EndpointID: "ep-2", Until: at(2 * time.Minute), Limit: limit}),
				fmt.Sprintf("events of ep-2 before minute 2 by pages of %d", limit))
		}
		// A key at an instant between events, or with an id no event has, is a place too.
		wantSame(t, all[len(all)-2:], listAudit(t, s, storage.AuditFilter{Limit: 10, After: storage.AuditKey{At: at(time.Minute), ID: "zz"}}),
			"events after the last id of minute 1")
		wantSame(t, all[1:3], listAudit(t, s, storage.AuditFilter{Limit: 2, After: storage.AuditKey{At: at(30 * time.Second), ID: "a"}}),
			"the first two events after 30 s")
	})
}

// testUnchangedWritesRecordNothing: a write that changes nothing records nothing
// (storage.AuditStore), so that the trail's record of a change keeps its first caller and
// time: retiring a retired secret, and a reseal that lost to another (the secret no longer
// sealed under the key it was read under).
func testUnchangedWritesRecordNothing(t *testing.T, h harness) {
	s := h.fresh(t)
	createEndpoint(t, s, newEndpoint("ep-1"))
	addSecret(t, s, newSecret("ep-1", "sec-1", at(0)))
	with := func(ev storage.AuditEvent) context.Context { return storage.WithAuditEvent(t.Context(), ev) }

	retire := auditEvent("a1", "secret.retire", "ep-1", "sec-1", at(time.Second))
	_, err := s.RetireSecret(with(retire), "ep-1", "sec-1", at(time.Second))
	must(t, err, "RetireSecret")
	_, err = s.RetireSecret(with(auditEvent("a2", "secret.retire", "ep-1", "sec-1", at(time.Minute))), "ep-1", "sec-1", at(time.Minute))
	must(t, err, "RetireSecret of a retired secret")

	reseal := auditEvent("a3", "secret.reseal", "ep-1", "sec-1", at(2*time.Minute))
	done, err := s.ResealSecret(with(reseal), "ep-1", "sec-1", "master-1", "master-2", []byte("x"))
	if err != nil || !done {
		t.Fatalf("ResealSecret = %v, %v; want done", done, err)
	}
	done, err = s.ResealSecret(with(auditEvent("a4", "secret.reseal", "ep-1", "sec-1", at(3*time.Minute))),
		"ep-1", "sec-1", "master-1", "master-3", []byte("stale"))
	if err != nil || done {
		t.Fatalf("stale ResealSecret = %v, %v; want not done", done, err)
	}
	wantSame(t, []storage.AuditEvent{retire, reseal}, listAudit(t, s, storage.AuditFilter{Limit: 10}), "audit events")
}
