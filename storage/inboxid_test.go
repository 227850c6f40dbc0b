package storage

import (
	"testing"

	"github.com/google/uuid"
)

type fixedIDStore struct{}

func (fixedIDStore) NewInboxID() string { return "chosen-by-the-store" }

// TestInboxIDs: time-ordered ids are UUIDv7 and sort in the order they were made, random ones
// are UUIDv4, and NewInboxID asks the store, falling back to random ids.
func TestInboxIDs(t *testing.T) {
	version := func(id string) uuid.Version {
		t.Helper()
		u, err := uuid.Parse(id)
		if err != nil {
			t.Fatalf("%q: %v", id, err)
		}
		return u.Version()
	}
	prev := ""
	for range 1000 {
		id := TimeOrderedInboxID()
		if version(id) != 7 || id <= prev {
			t.Fatalf("time-ordered id %q after %q: want a UUIDv7 that sorts after the one before", id, prev)
		}
		prev = id
	}
	if id := RandomInboxID(); version(id) != 4 {
		t.Fatalf("random id %q is not a UUIDv4", id)
	}
	if id := NewInboxID(fixedIDStore{}); id != "chosen-by-the-store" {
		t.Fatalf("NewInboxID with a store that chooses: %q", id)
	}
	if id := NewInboxID(struct{}{}); version(id) != 4 {
		t.Fatalf("NewInboxID with a store that does not choose: %q, want a UUIDv4", id)
	}
}
