package crdb

import (
	"testing"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// TestUnreadableRecordIsNotUnavailable: see storagetest.UnreadableRecordIsNotUnavailable.
func TestUnreadableRecordIsNotUnavailable(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	storagetest.UnreadableRecordIsNotUnavailable(t, s, func(t *testing.T, inboxID string) {
		exec(t, connect(t, url), `UPDATE inbox SET headers = '\xff'::bytea WHERE id = $1`, inboxID)
	})
}
