package storage

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestStorableTextReplacesNUL: a NUL in a worker's text is kept as U+FFFD, not dropped, and
// the rest of the text is kept as it is.
func TestStorableTextReplacesNUL(t *testing.T) {
	t.Parallel()
	if got, want := StorableText("exit 1:\x00out\x00"), "exit 1:\uFFFDout\uFFFD"; got != want {
		t.Errorf("StorableText = %q, want %q", got, want)
	}
}

// TestDeadLetterKeyIsZeroWithoutAnInboxID: a key without an inbox id lists from the first dead
// delivery whatever its VisibleAt; one with an inbox id does not.
func TestDeadLetterKeyIsZeroWithoutAnInboxID(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	if !(DeadLetterKey{VisibleAt: at}).IsZero() {
		t.Error("a key with a VisibleAt and no inbox id is not zero")
	}
	if (DeadLetterKey{InboxID: "in-1"}).IsZero() {
		t.Error("a key with an inbox id is zero")
	}
}

// TestDeadLetterKeyOfIsVisibleAtThenInboxID: a dead delivery's key is its VisibleAt and inbox
// id, not its lease's end.
func TestDeadLetterKeyOfIsVisibleAtThenInboxID(t *testing.T) {
	t.Parallel()
	at := time.Unix(1700000000, 0)
	d := LeasedDelivery{VisibleAt: at, LeasedUntil: at.Add(time.Minute)}
	d.InboxID = "in-1"
	if got, want := DeadLetterKeyOf(d), (DeadLetterKey{VisibleAt: at, InboxID: "in-1"}); got != want {
		t.Errorf("DeadLetterKeyOf = %+v, want %+v", got, want)
	}
}

// TestByEndpointSplitsUpToMaxEndpointPicks: a filter naming exactly MaxEndpointPicks endpoints
// is still picked one endpoint at a time.
func TestByEndpointSplitsUpToMaxEndpointPicks(t *testing.T) {
	t.Parallel()
	ids := make([]string, MaxEndpointPicks)
	for i := range ids {
		ids[i] = fmt.Sprint("ep-", i)
	}
	got := InboxFilter{EndpointIDs: ids}.ByEndpoint()
	if len(got) != MaxEndpointPicks {
		t.Fatalf("ByEndpoint of %d endpoints: %d filters, want one each", MaxEndpointPicks, len(got))
	}
	for i, f := range got {
		if len(f.EndpointIDs) != 1 || f.EndpointIDs[0] != ids[i] {
			t.Errorf("filter %d: %v, want [%s]", i, f.EndpointIDs, ids[i])
		}
	}
}

// TestRequestTimeReadsTheClockOverNow: a lease or an extension with a clock is taken at the
// clock's time, read when asked; without one, at Now.
func TestRequestTimeReadsTheClockOverNow(t *testing.T) {
	t.Parallel()
	now := time.Unix(1700000000, 0)
	later := now.Add(10 * time.Second)
	clock := func() time.Time { return later }
	if got := (LeaseRequest{Now: now, Clock: clock}).Time(); !got.Equal(later) {
		t.Errorf("LeaseRequest with a clock: %v, want the clock's %v", got, later)
	}
	if got := (LeaseRequest{Now: now}).Time(); !got.Equal(now) {
		t.Errorf("LeaseRequest without a clock: %v, want Now %v", got, now)
	}
	if got := (ExtendRequest{Now: now, Clock: clock}).Time(); !got.Equal(later) {
		t.Errorf("ExtendRequest with a clock: %v, want the clock's %v", got, later)
	}
	if got := (ExtendRequest{Now: now}).Time(); !got.Equal(now) {
		t.Errorf("ExtendRequest without a clock: %v, want Now %v", got, now)
	}
}

// TestMissedLeaseByState: a missed lease is not found for a delivery that does not exist,
// already acked (a lease lost whose work is done) for an acked one, and a lease lost otherwise.
func TestMissedLeaseByState(t *testing.T) {
	t.Parallel()
	if err := MissedLease("in-1", ""); !errors.Is(err, ErrNotFound) || errors.Is(err, ErrLeaseLost) {
		t.Errorf("no record: %v, want not found only", err)
	}
	if err := MissedLease("in-1", StateAcked); !errors.Is(err, ErrAlreadyAcked) {
		t.Errorf("acked: %v, want already acked", err)
	}
	for _, state := range []string{StatePending, StateLeased, StateDead} {
		err := MissedLease("in-1", state)
		if !errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrAlreadyAcked) || errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want lease lost only", state, err)
		}
	}
}
