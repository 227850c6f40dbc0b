package storagetest

import (
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

func testEndpoints(t *testing.T, h harness) {
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

	t.Run("update unknown returns ErrNotFound and creates nothing", func(t *testing.T) {
		s := h.fresh(t)
		wantErr(t, s.UpdateEndpoint(t.Context(), newEndpoint("ep-1")), storage.ErrNotFound, "UpdateEndpoint")
		_, err := s.GetEndpoint(t.Context(), "ep-1")
		wantErr(t, err, storage.ErrNotFound, "GetEndpoint after failed update")
	})
}
