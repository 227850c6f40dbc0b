package sqlite_test

import (
	"database/sql"
	"testing"

	"github.com/hookverify/hookverify/storage/storagetest"
)

// TestUnreadableRecordIsNotUnavailable: see storagetest.UnreadableRecordIsNotUnavailable.
// Before the fix the store wrapped ErrUnreadable in ErrUnavailable, which the PostgreSQL store
// does not, so that a corrupt record passed for an outage to retry.
func TestUnreadableRecordIsNotUnavailable(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	storagetest.UnreadableRecordIsNotUnavailable(t, s, func(t *testing.T, inboxID string) {
		raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.ExecContext(t.Context(), `UPDATE inbox SET headers = x'ff' WHERE id = ?`, inboxID); err != nil {
			t.Fatal(err)
		}
	})
}
