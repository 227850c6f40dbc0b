package crdb

import (
	"testing"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestEndpointOptionsKeepNilApartFromEmpty: options stored empty come back as an empty map,
// and options stored nil come back nil (encodeOptions stores only nil as SQL NULL), so an
// endpoint configured with "no options" reads back as it was written, on create and update.
func TestEndpointOptionsKeepNilApartFromEmpty(t *testing.T) {
	t.Parallel()
	s := open(t, pgtest.Shared(t).NewDatabase(t))
	ctx := t.Context()
	check := func(id string, wantNil bool, what string) {
		t.Helper()
		got, err := s.GetEndpoint(ctx, id)
		if err != nil {
			t.Fatalf("GetEndpoint(%s): %v", id, err)
		}
		if (got.Options == nil) != wantNil || len(got.Options) != 0 {
			t.Fatalf("%s: options of %s = %#v, want nil: %v", what, id, got.Options, wantNil)
		}
	}
	empty := storage.Endpoint{ID: "ep-empty", Provider: "stripe", DedupeScope: "ep-empty", Options: map[string]string{}}
	none := storage.Endpoint{ID: "ep-nil", Provider: "stripe", DedupeScope: "ep-nil"}
	for _, e := range []storage.Endpoint{empty, none} {
		if err := s.CreateEndpoint(ctx, e); err != nil {
			t.Fatalf("CreateEndpoint(%s): %v", e.ID, err)
		}
	}
	check("ep-empty", false, "after create")
	check("ep-nil", true, "after create")
	empty.ID, empty.DedupeScope, none.ID, none.DedupeScope = "ep-nil", "ep-nil", "ep-empty", "ep-empty"
	for _, e := range []storage.Endpoint{empty, none} {
		if err := s.UpdateEndpoint(ctx, e); err != nil {
			t.Fatalf("UpdateEndpoint(%s): %v", e.ID, err)
		}
	}
	check("ep-nil", false, "after update to empty")
	check("ep-empty", true, "after update to nil")
}
