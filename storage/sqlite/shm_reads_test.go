package sqlite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// runShmCheckpointingChild is runShmChild, failing unless the child accepted every claim.
func runShmCheckpointingChild(t *testing.T, path string, from, count int, checkpoint bool) []int {
	t.Helper()
	rounds := 1
	if checkpoint {
		rounds = 2
	}
	accepted := runShmChild(t, path, from, count, checkpoint)
	if len(accepted) != rounds*count {
		t.Fatalf("child accepted %d of %d", len(accepted), rounds*count)
	}
	return accepted
}

// TestShmLostReadsNotServedFromTheStaleIndex: once the -shm was lost, another process that
// opens the database keeps its own index: it checkpoints (copying its commits into the database
// file) and restarts the log, writing its new frames where this process's stale index still
// finds the pages it committed. Reads here would then return other pages' content, or fail as
// a malformed database; they must be refused as the writes are (ErrUnavailable), or be right.
func TestShmLostReadsNotServedFromTheStaleIndex(t *testing.T) {
	s, path, _ := storeWithClaims(t, 0)
	// Each a body of its own, so that a page of another delivery shows.
	want := map[int][]byte{}
	for i := range 60 {
		d := deliveryOfSize(i, 3000)
		d.Body = bytes.Repeat([]byte{byte('a' + i%26)}, 3000)
		want[i] = d.Body
		if r, err := s.Claim(t.Context(), d); err != nil || !r.Accepted {
			t.Fatal(r, err)
		}
	}
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Ping after the -shm was deleted = %v, want ErrUnavailable", err)
	}
	runShmCheckpointingChild(t, path, 1000, 150, true)
	wrong := 0
	for i := range 60 {
		d, err := s.GetDelivery(t.Context(), fmt.Sprint("inbox-", i))
		switch {
		case errors.Is(err, storage.ErrUnavailable):
		case err != nil:
			wrong++
			if wrong == 1 {
				t.Errorf("GetDelivery(inbox-%d) = %v, want it right or ErrUnavailable", i, err)
			}
		case !bytes.Equal(d.Body, want[i]) || d.EventID != fmt.Sprint("evt-", i):
			wrong++
			if wrong == 1 {
				t.Errorf("GetDelivery(inbox-%d) = event %s, a body of %d bytes, not the one stored", i, d.EventID, len(d.Body))
			}
		}
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err == nil && n != 60 && n != 360 {
		t.Errorf("CountDeliveries = %d, want 60 (this store's snapshot), 360, or ErrUnavailable", n)
	} else if err != nil && !errors.Is(err, storage.ErrUnavailable) {
		t.Errorf("CountDeliveries = %v, want a count or ErrUnavailable", err)
	}
	if ep, err := s.GetEndpoint(t.Context(), "ep-1"); err != nil && !errors.Is(err, storage.ErrUnavailable) || err == nil && ep.ID != "ep-1" {
		// A NotFound here is answered to the provider as an unknown endpoint, not a retry.
		t.Errorf("GetEndpoint(ep-1) = %+v, %v, want it or ErrUnavailable", ep, err)
	}
	t.Logf("%d of 60 reads wrong", wrong)
}

// TestShmLostThenLogDeleted: the -shm is deleted (and noticed), then the log too, as a cleaner
// of old files or `rm hookverify.db-*` does one after the other. No other process opened the
// database meanwhile (there is no -shm at the path: any that did would have made one, and
// cannot have deleted it while this store holds the file), so this store's index is the log's
// only one and right. What the deleted log held, every claim answered ACCEPTED since the last
// checkpoint, must be copied into the database file, as for a deleted log alone: the next
// start finds no log.
func TestShmLostThenLogDeleted(t *testing.T) {
	s, path, accepted := storeWithClaims(t, 30)
	if err := os.Remove(path + "-shm"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Ping after the -shm was deleted = %v, want ErrUnavailable", err)
	}
	if err := os.Remove(path + "-wal"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(t.Context()); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Ping after the log was deleted = %v, want ErrUnavailable", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkAsNextStartFindsIt(t, path, accepted)
}
