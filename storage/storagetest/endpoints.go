package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

func testEndpoints(t *testing.T, h harness) {
	t.Run("ids holding NUL name nothing", func(t *testing.T) { testAdminHostileInput(t, h) })
	t.Run("create then get returns every field", func(t *testing.T) {
		cases := map[string]func(e *storage.Endpoint){
			"typical": func(*storage.Endpoint) {},
			"disabled with odd duration and large limit": func(e *storage.Endpoint) {
				e.Disabled = true
				e.TimestampTolerance = 90*time.Second + 1500*time.Millisecond
				e.MaxBodyBytes = 1 << 40
				e.DedupeScope = "shared-scope"
			},
			"zero tolerance and limit": func(e *storage.Endpoint) {
				e.TimestampTolerance = 0
				e.MaxBodyBytes = 0
			},
			"nil options": func(e *storage.Endpoint) { e.Options = nil },
			"empty options": func(e *storage.Endpoint) {
				e.Options = map[string]string{}
			},
			"unusual options": func(e *storage.Endpoint) {
				e.Options = map[string]string{
					"empty":   "",
					"unicode": "héllo, 世界",
					"quotes":  `"{}":\n\t`,
					"":        "empty key",
				}
			},
			"different created and updated times": func(e *storage.Endpoint) {
				e.CreatedAt = at(-48 * time.Hour)
				e.UpdatedAt = at(time.Hour + 7*time.Microsecond)
			},
		}
		for name, edit := range cases {
			t.Run(name, func(t *testing.T) {
				s := h.fresh(t)
				e := newEndpoint("ep-1")
				edit(&e)
				createEndpoint(t, s, e)
				got, err := s.GetEndpoint(t.Context(), e.ID)
				must(t, err, "GetEndpoint")
				wantSame(t, e, got, "stored endpoint")
			})
		}
	})

	t.Run("times in another zone come back as the same instant in UTC", func(t *testing.T) {
		s := h.fresh(t)
		e := newEndpoint("ep-1")
		e.CreatedAt = at(0).In(time.FixedZone("UTC-7", -7*60*60))
		e.UpdatedAt = at(time.Minute).In(time.FixedZone("UTC+5:30", 5*60*60+30*60))
		createEndpoint(t, s, e)
		got, err := s.GetEndpoint(t.Context(), e.ID)
		must(t, err, "GetEndpoint")
		wantSame(t, e, got, "stored endpoint")
	})

	t.Run("duplicate create returns ErrAlreadyExists and keeps the first", func(t *testing.T) {
		s := h.fresh(t)
		first := newEndpoint("ep-1")
		createEndpoint(t, s, first)
		second := newEndpoint("ep-1")
		second.Provider = "github"
		second.DedupeScope = "other"
		wantErr(t, s.CreateEndpoint(t.Context(), second), storage.ErrAlreadyExists, "second CreateEndpoint")
		got, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, first, got, "stored endpoint")
	})

	t.Run("get unknown returns ErrNotFound", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		_, err := s.GetEndpoint(t.Context(), "ep-2")
		wantErr(t, err, storage.ErrNotFound, "GetEndpoint")
	})

	t.Run("list of an empty store is empty", func(t *testing.T) {
		s := h.fresh(t)
		got, err := s.ListEndpoints(t.Context())
		must(t, err, "ListEndpoints")
		if len(got) != 0 {
			t.Fatalf("ListEndpoints = %+v, want none", got)
		}
	})

	t.Run("list returns every endpoint ordered by id", func(t *testing.T) {
		s := h.fresh(t)
		var want []storage.Endpoint
		for _, id := range []string{"ep-c", "ep-a", "ep-d", "ep-b"} {
			e := newEndpoint(id)
			e.Options = map[string]string{"id": id}
			createEndpoint(t, s, e)
		}
		for _, id := range []string{"ep-a", "ep-b", "ep-c", "ep-d"} {
			e := newEndpoint(id)
			e.Options = map[string]string{"id": id}
			want = append(want, e)
		}
		got, err := s.ListEndpoints(t.Context())
		must(t, err, "ListEndpoints")
		wantSame(t, want, got, "listed endpoints")
	})

	t.Run("pages list every endpoint once, in the byte order of ids", func(t *testing.T) {
		s := h.fresh(t)
		// Ids a collation would order otherwise ("a" near "A", punctuation ignored).
		ids := []string{"b", "A-b", "a.B", "a_c", "B", "a", "ep-1", "Ep-2", "a-c", "_x", "9"}
		for _, id := range ids {
			createEndpoint(t, s, newEndpoint(id))
		}
		want := slices.Sorted(slices.Values(ids))
		for _, limit := range []int{1, 2, 3, len(ids), len(ids) + 1} {
			var got []string
			after := ""
			for pages := 0; ; pages++ {
				if pages > len(ids)+1 {
					t.Fatalf("limit %d: pages did not end", limit)
				}
				page, err := s.ListEndpointsPage(t.Context(), after, limit)
				must(t, err, "ListEndpointsPage")
				if len(page) > limit {
					t.Fatalf("limit %d: page of %d", limit, len(page))
				}
				for _, e := range page {
					got = append(got, e.ID)
				}
				if len(page) < limit {
					break
				}
				after = page[len(page)-1].ID
			}
			wantSame(t, want, got, fmt.Sprintf("ids listed by pages of %d", limit))
		}
		page, err := s.ListEndpointsPage(t.Context(), "a", 2)
		must(t, err, "ListEndpointsPage")
		wantSame(t, []storage.Endpoint{newEndpoint("a-c"), newEndpoint("a.B")}, page, "the two endpoints after a")
		page, err = s.ListEndpointsPage(t.Context(), "zzz", 2)
		must(t, err, "ListEndpointsPage")
		if len(page) != 0 {
			t.Fatalf("ListEndpointsPage after the last = %+v, want none", page)
		}
		_, err = s.ListEndpointsPage(t.Context(), "", 0)
		wantErr(t, err, storage.ErrInvalid, "ListEndpointsPage with limit 0")
	})

	t.Run("update replaces all but id, provider and created time", func(t *testing.T) {
		s := h.fresh(t)
		orig := newEndpoint("ep-1")
		createEndpoint(t, s, orig)
		createEndpoint(t, s, newEndpoint("ep-2"))

		upd := storage.Endpoint{
			ID:                 "ep-1",
			Provider:           "github",
			TimestampTolerance: 30 * time.Second,
			MaxBodyBytes:       4096,
			DedupeScope:        "tenant-7",
			Disabled:           true,
			Options:            map[string]string{"mode": "strict", "v": "2"},
			CreatedAt:          at(time.Hour),
			UpdatedAt:          at(2*time.Hour + 3*time.Microsecond),
		}
		must(t, s.UpdateEndpoint(t.Context(), upd), "UpdateEndpoint")
		want := upd
		want.Provider = orig.Provider
		want.CreatedAt = orig.CreatedAt
		got, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, want, got, "updated endpoint")

		other, err := s.GetEndpoint(t.Context(), "ep-2")
		must(t, err, "GetEndpoint ep-2")
		wantSame(t, newEndpoint("ep-2"), other, "untouched endpoint")

		// Updating back to zero values must clear, not keep, the earlier ones.
		cleared := storage.Endpoint{ID: "ep-1", DedupeScope: "ep-1", UpdatedAt: at(3 * time.Hour)}
		must(t, s.UpdateEndpoint(t.Context(), cleared), "UpdateEndpoint to zero values")
		want = cleared
		want.Provider = orig.Provider
		want.CreatedAt = orig.CreatedAt
		got, err = s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, want, got, "cleared endpoint")
	})

	// UpdatedAt is what a caller's compare-and-set compares (the API's update_time): two
	// updates within one microsecond of the clock, or a clock set back, must not leave it as
	// it was, or a writer holding the first read would overwrite the second update unseen.
	t.Run("every update moves the update time forward, whatever the clock says", func(t *testing.T) {
		s := h.fresh(t)
		orig := newEndpoint("ep-1")
		createEndpoint(t, s, orig)
		wantUpdatedAt := func(want time.Time, what string) {
			t.Helper()
			got, err := s.GetEndpoint(t.Context(), "ep-1")
			must(t, err, "GetEndpoint")
			if !got.UpdatedAt.Equal(want) {
				t.Fatalf("%s: UpdatedAt %s, want %s", what, fmtTime(got.UpdatedAt), fmtTime(want))
			}
		}
		same := orig
		same.MaxBodyBytes = 2048
		must(t, s.UpdateEndpoint(t.Context(), same), "UpdateEndpoint at the creation's time")
		wantUpdatedAt(at(time.Microsecond), "update in the creation's microsecond")
		back := same
		back.UpdatedAt = at(-time.Hour)
		must(t, s.UpdateEndpoint(t.Context(), back), "UpdateEndpoint with a clock set back")
		wantUpdatedAt(at(2*time.Microsecond), "update with a clock set back")
		stored, err := s.ModifyEndpoint(t.Context(), "ep-1", func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
			next := current
			next.Disabled = true
			next.UpdatedAt = at(0) // a fixed clock
			return next, "", nil
		})
		must(t, err, "ModifyEndpoint with a fixed clock")
		if want := at(3 * time.Microsecond); !stored.UpdatedAt.Equal(want) {
			t.Fatalf("ModifyEndpoint with a fixed clock returned UpdatedAt %s, want %s", fmtTime(stored.UpdatedAt), fmtTime(want))
		}
		wantUpdatedAt(at(3*time.Microsecond), "modification with a fixed clock")
		later := same
		later.UpdatedAt = at(time.Hour)
		must(t, s.UpdateEndpoint(t.Context(), later), "UpdateEndpoint an hour later")
		wantUpdatedAt(at(time.Hour), "update an hour later")
	})

	t.Run("update unknown returns ErrNotFound and creates nothing", func(t *testing.T) {
		s := h.fresh(t)
		wantErr(t, s.UpdateEndpoint(t.Context(), newEndpoint("ep-1")), storage.ErrNotFound, "UpdateEndpoint")
		_, err := s.GetEndpoint(t.Context(), "ep-1")
		wantErr(t, err, storage.ErrNotFound, "GetEndpoint after failed update")
	})

	t.Run("modify stores what the change makes of the stored endpoint", func(t *testing.T) {
		s := h.fresh(t)
		orig := newEndpoint("ep-1")
		orig.Options = map[string]string{"region": "eu", "mode": "lax"}
		createEndpoint(t, s, orig)
		createEndpoint(t, s, newEndpoint("ep-2"))

		var seen []storage.Endpoint
		got, err := s.ModifyEndpoint(t.Context(), "ep-1", func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
			seen = append(seen, current)
			next := current
			next.ID, next.Provider, next.CreatedAt = "ep-2", "github", at(time.Hour) // ignored
			next.TimestampTolerance = 30 * time.Second
			next.MaxBodyBytes = 4096
			next.Disabled = true
			next.Options = map[string]string{"region": current.Options["region"], "mode": "strict"}
			next.UpdatedAt = at(2*time.Hour + 3*time.Microsecond)
			return next, "detail", nil
		})
		must(t, err, "ModifyEndpoint")
		if len(seen) == 0 {
			t.Fatal("ModifyEndpoint never called the change")
		}
		wantSame(t, orig, seen[len(seen)-1], "endpoint the change was given")
		want := orig
		want.TimestampTolerance = 30 * time.Second
		want.MaxBodyBytes = 4096
		want.Disabled = true
		want.Options = map[string]string{"region": "eu", "mode": "strict"}
		want.UpdatedAt = at(2*time.Hour + 3*time.Microsecond)
		wantSame(t, want, got, "endpoint ModifyEndpoint returned")
		stored, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, want, stored, "modified endpoint")
		other, err := s.GetEndpoint(t.Context(), "ep-2")
		must(t, err, "GetEndpoint ep-2")
		wantSame(t, newEndpoint("ep-2"), other, "untouched endpoint")
	})

	t.Run("modify of an unknown endpoint returns ErrNotFound without calling the change", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		ctx := storage.WithAuditEvent(t.Context(), auditEvent("a1", "endpoint.update", "ep-2", "", at(0)))
		_, err := s.ModifyEndpoint(ctx, "ep-2", func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
			t.Errorf("change called with %+v", current)
			return current, "", nil
		})
		wantErr(t, err, storage.ErrNotFound, "ModifyEndpoint")
		_, err = s.GetEndpoint(t.Context(), "ep-2")
		wantErr(t, err, storage.ErrNotFound, "GetEndpoint after failed modify")
		wantSame(t, []storage.AuditEvent(nil), listAudit(t, s, storage.AuditFilter{Limit: 10}), "audit events")
	})

	t.Run("a failed change is returned as is and writes and records nothing", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		refusal := errors.New("refused by the caller")
		ctx := storage.WithAuditEvent(t.Context(), auditEvent("a1", "endpoint.update", "ep-1", "", at(0)))
		_, err := s.ModifyEndpoint(ctx, "ep-1", func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
			return storage.Endpoint{}, "", refusal
		})
		if err != refusal {
			t.Fatalf("ModifyEndpoint = %v, want the change's error itself", err)
		}
		got, err := s.GetEndpoint(t.Context(), "ep-1")
		must(t, err, "GetEndpoint")
		wantSame(t, newEndpoint("ep-1"), got, "endpoint after a refused change")
		wantSame(t, []storage.AuditEvent(nil), listAudit(t, s, storage.AuditFilter{Limit: 10}), "audit events")
	})

	t.Run("modify records the audit event with the change's detail", func(t *testing.T) {
		s := h.fresh(t)
		createEndpoint(t, s, newEndpoint("ep-1"))
		ev := auditEvent("a1", "endpoint.update", "ep-1", "", at(time.Second))
		_, err := s.ModifyEndpoint(storage.WithAuditEvent(t.Context(), ev), "ep-1",
			func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
				next := current
				next.Disabled = true
				return next, fmt.Sprintf("disabled: %t -> %t", current.Disabled, next.Disabled), nil
			})
		must(t, err, "ModifyEndpoint")
		ev.Detail = "disabled: false -> true"
		wantSame(t, []storage.AuditEvent{ev}, listAudit(t, s, storage.AuditFilter{Limit: 10}), "audit events")
	})

	// Each modification adds one to MaxBodyBytes and records the step it made: a modification
	// that read before another's write and wrote after it would lose that one's step, and two
	// records would describe the same step.
	t.Run("concurrent modifications from several handles are never lost", func(t *testing.T) {
		open := h.reopenable(t)
		stores := []storage.Store{open(t), open(t), open(t)}
		start := newEndpoint("ep-1")
		start.MaxBodyBytes = 1000
		createEndpoint(t, stores[0], start)
		const perStore = 2
		n := len(stores) * perStore
		errs := make([]error, n)
		race(n, func(i int) {
			ev := auditEvent(fmt.Sprintf("a%02d", i), "endpoint.update", "ep-1", "", at(time.Second))
			_, errs[i] = stores[i%len(stores)].ModifyEndpoint(storage.WithAuditEvent(t.Context(), ev), "ep-1", increment(1))
		})
		for i, err := range errs {
			must(t, err, fmt.Sprintf("ModifyEndpoint #%d", i))
		}
		wantSteps(t, stores[0], 1000, n)
	})

	t.Run("a modification that meets one in progress applies after it", func(t *testing.T) {
		open := h.reopenable(t)
		first, second := open(t), open(t)
		start := newEndpoint("ep-1")
		start.MaxBodyBytes = 1000
		createEndpoint(t, first, start)
		inChange, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		firstDone := make(chan error, 1)
		go func() {
			ev := auditEvent("a1", "endpoint.update", "ep-1", "", at(time.Second))
			_, err := first.ModifyEndpoint(storage.WithAuditEvent(t.Context(), ev), "ep-1",
				func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
					// The first run holds its transaction open until the second modification
					// has started; runs again after a conflict go straight through.
					once.Do(func() {
						close(inChange)
						<-release
					})
					return increment(1)(current, nil)
				})
			firstDone <- err
		}()
		reached(t, inChange, firstDone, "the first modification")
		secondDone := make(chan error, 1)
		go func() {
			ev := auditEvent("a2", "endpoint.update", "ep-1", "", at(time.Second))
			_, err := second.ModifyEndpoint(storage.WithAuditEvent(t.Context(), ev), "ep-1", increment(1))
			secondDone <- err
		}()
		// Give the second modification time to read and, if nothing stops it, write while the
		// first is inside its change. Either way the outcome below must hold.
		waitAWhile(secondDone)
		close(release)
		must(t, <-firstDone, "first ModifyEndpoint")
		must(t, <-secondDone, "second ModifyEndpoint")
		wantSteps(t, first, 1000, 2)
	})
}

// increment is a change that adds by to MaxBodyBytes, moves UpdatedAt on by a microsecond and
// describes the step.
func increment(by int64) storage.EndpointChange {
	return func(current storage.Endpoint, _ []storage.Secret) (storage.Endpoint, string, error) {
		next := current
		next.MaxBodyBytes += by
		next.UpdatedAt = current.UpdatedAt.Add(time.Microsecond)
		return next, fmt.Sprintf("%d -> %d", current.MaxBodyBytes, next.MaxBodyBytes), nil
	}
}

// wantSteps checks that n increments by one from start all applied, one after the other, each
// recorded once with the step it made.
func wantSteps(t *testing.T, s storage.Store, start int64, n int) {
	t.Helper()
	got, err := s.GetEndpoint(t.Context(), "ep-1")
	must(t, err, "GetEndpoint")
	if got.MaxBodyBytes != start+int64(n) {
		t.Fatalf("MaxBodyBytes = %d after %d increments from %d: increments were lost", got.MaxBodyBytes, n, start)
	}
	var details []string
	for _, ev := range listAudit(t, s, storage.AuditFilter{EndpointID: "ep-1", Limit: 100}) {
		details = append(details, ev.Detail)
	}
	slices.Sort(details)
	var want []string
	for i := range int64(n) {
		want = append(want, fmt.Sprintf("%d -> %d", start+i, start+i+1))
	}
	wantSame(t, want, details, "recorded steps")
}
