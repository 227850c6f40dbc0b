package storage

import (
	"testing"

	"github.com/google/uuid"
)

// TestInboxIDsAreCanonicalUUIDs: inbox ids, time-ordered or random, are UUIDs in their
// canonical form (36 lower-case characters, no "urn:uuid:" prefix), as clients see them.
func TestInboxIDsAreCanonicalUUIDs(t *testing.T) {
	t.Parallel()
	for name, id := range map[string]string{
		"time-ordered": TimeOrderedInboxID(),
		"random":       RandomInboxID(),
		"default":      NewInboxID(struct{}{}),
	} {
		u, err := uuid.Parse(id)
		if err != nil || u.String() != id {
			t.Errorf("%s id %q is not a canonical UUID (%v)", name, id, err)
		}
	}
}
