package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// TestNoDuplicateFromDeletedFiles: once the database file or its log is deleted, a
// redelivery of an event accepted before is not answered DUPLICATE (which the provider takes
// as "stored", and stops sending) from the claims the open files still show: the deleted
// database file is gone at the next start, where a restore from a backup without the event
// would accept the provider's retry; a deleted log's content is only safe once copied into the
// database file. The answer is ErrUnavailable, as for a write, and the log is rescued.
func TestNoDuplicateFromDeletedFiles(t *testing.T) {
	t.Parallel()
	for _, deleted := range []string{"", "-wal"} {
		t.Run("deleted "+cmpOr(deleted, "database file"), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "hookverify.db")
			s := openAt(t, path)
			createStripeEndpoint(t, s, "ep-1")
			first := deliveryOfSize(0, 100)
			if r, err := s.Claim(t.Context(), first); err != nil || !r.Accepted {
				t.Fatalf("claim before the deletion = %+v, %v", r, err)
			}
			if err := os.Remove(path + deleted); err != nil {
				t.Fatal(err)
			}
			again := first
			again.InboxID = "inbox-redelivery"
			for _, d := range []storage.Delivery{again, first} {
				r, err := s.Claim(t.Context(), d)
				if !errors.Is(err, storage.ErrUnavailable) || !strings.Contains(err.Error(), path+deleted+" was deleted") {
					t.Fatalf("claim of %s (inbox id %s) after %s was deleted = %+v, %v; want ErrUnavailable naming it",
						d.EventID, d.InboxID, path+deleted, r, err)
				}
			}
			// LookupClaim, which the server reads under backpressure to answer DUPLICATE.
			if c, err := s.LookupClaim(t.Context(), "ep-1", first.EventID); !errors.Is(err, storage.ErrUnavailable) {
				t.Fatalf("LookupClaim after %s was deleted = %+v, %v; want ErrUnavailable", path+deleted, c, err)
			}
			if deleted == "-wal" {
				// The look copied the log into the database file: a kill now loses nothing.
				crashed := copyAsOnDisk(t, path)
				if _, err := crashed.LookupClaim(t.Context(), "ep-1", first.EventID); err != nil {
					t.Fatalf("after a kill: %v", err)
				}
			}
		})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
