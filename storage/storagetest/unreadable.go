package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// UnreadableRecordIsNotUnavailable checks the answers of the calls that read a record back
// once corrupt (corrupt makes the stored record of the inbox id unreadable, as
// UnreadableRecordFailsItsLeaseAlone's does): ErrUnreadable, and not ErrUnavailable, which
// says the database could not be reached and the call may simply be retried. A corrupt record
// fails every retry, and the server reports an unavailable store as a passing outage (logged
// as a warning) but any other failure as one an operator must look at (an error).
func UnreadableRecordIsNotUnavailable(t *testing.T, s storage.Store, corrupt func(t *testing.T, inboxID string)) {
	t.Helper()
	createEndpoint(t, s, newEndpoint("ep-1"))
	createEndpoint(t, s, newEndpoint("ep-2"))
	deliver(t, s, "ep-1", "ep-1", "dead", at(0))
	req := leaseReq("tok-1", at(time.Hour), 1)
	req.MaxAttempts = 1
	wantIDs(t, lease(t, s, req), "lease", "dead")
	if !nack(t, s, "dead", "tok-1", at(time.Hour), 1, at(time.Hour)) {
		t.Fatal("Nack at the last attempt did not report dead")
	}
	deliver(t, s, "ep-2", "ep-2", "pending", at(time.Second))
	corrupt(t, "dead")
	corrupt(t, "pending")
	unreadable := func(err error, what string) {
		t.Helper()
		if !errors.Is(err, storage.ErrUnreadable) || errors.Is(err, storage.ErrUnavailable) {
			t.Errorf("%s of a corrupt record: got error %v, want one wrapping %v and not %v", what, err,
				storage.ErrUnreadable, storage.ErrUnavailable)
		}
	}
	_, err := s.GetDelivery(t.Context(), "pending")
	unreadable(err, "GetDelivery")
	_, err = s.Lease(t.Context(), leaseReq("tok-2", at(2*time.Hour), 10))
	unreadable(err, "Lease")
	_, _, err = s.ListDeadLetters(t.Context(), storage.InboxFilter{}, storage.DeadLetterKey{}, 10, 0)
	unreadable(err, "ListDeadLetters")
}
