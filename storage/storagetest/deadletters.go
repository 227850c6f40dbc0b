package storagetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// deadLetterPage is one ListDeadLetters answer, as the pagination tests compare it.
type deadLetterPage struct {
	ids  []string
	more bool
}

// deadLetterPages lists every dead letter matching f a page at a time, each page starting
// after the key of the previous one's last delivery, as the server's page tokens do, and
// returns the pages. It stops when a page reports no more, and fails the test if a listing
// runs past the number of deliveries it could hold.
func deadLetterPages(t *testing.T, s storage.Store, f storage.InboxFilter, limit int, maxBytes int64) []deadLetterPage {
	t.Helper()
	var (
		pages []deadLetterPage
		after storage.DeadLetterKey
	)
	for range 100 {
		list, more, err := s.ListDeadLetters(t.Context(), f, after, limit, maxBytes)
		must(t, err, fmt.Sprintf("ListDeadLetters after %+v", after))
		pages = append(pages, deadLetterPage{inboxIDs(list), more})
		if !more {
			return pages
		}
		if len(list) == 0 {
			t.Fatalf("ListDeadLetters after %+v: an empty page reports more", after)
		}
		after = storage.DeadLetterKeyOf(list[len(list)-1])
	}
	t.Fatalf("ListDeadLetters did not end after 100 pages: %v", pages)
	return nil
}

func wantPages(t *testing.T, got []deadLetterPage, what string, want ...deadLetterPage) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		same = got[i].more == want[i].more && slices.Equal(got[i].ids, want[i].ids) ||
			got[i].more == want[i].more && len(got[i].ids) == 0 && len(want[i].ids) == 0
	}
	if !same {
		t.Fatalf("%s: got pages %v, want %v", what, got, want)
	}
}

func page(more bool, ids ...string) deadLetterPage { return deadLetterPage{ids, more} }

// killAll leases every delivery and nacks it at its last attempt, so that each is dead with
// its VisibleAt unchanged.
func killAll(t *testing.T, s storage.Store, now time.Time) {
	t.Helper()
	req := leaseReq("tok-kill", now, 100)
	req.MaxAttempts = 1
	for _, d := range lease(t, s, req) {
		if !nack(t, s, d.InboxID, "tok-kill", now, 1, now) {
			t.Fatalf("Nack of %s at max attempts did not report dead", d.InboxID)
		}
	}
}

// testDeadLetterPages: an operator with more dead letters than one answer holds must be able to
// see them all, a page at a time, none skipped and none twice.
func testDeadLetterPages(t *testing.T, h harness) {
	t0 := at(time.Hour)

	t.Run("dead letters are listed a page at a time, in a total order, none skipped or repeated", func(t *testing.T) {
		s := inboxFixture(t, h)
		// Claimed out of order, several sharing a VisibleAt, with ids whose byte order is not
		// their order in a language's collation ("B" < "a" < "b"), and one of another
		// endpoint among them.
		for _, d := range []struct {
			endpoint, id string
			received     time.Duration
		}{
			{"ep-1", "b5", 1}, {"ep-1", "B1", 1}, {"ep-1", "a3", 1},
			{"ep-2", "other", 2}, {"ep-1", "e2", 2},
			{"ep-1", "e6", 3}, {"ep-1", "e0", 3}, {"ep-1", "E4", 3},
		} {
			deliver(t, s, d.endpoint, d.endpoint, d.id, at(d.received*time.Second))
		}
		killAll(t, s, t0)
		ep1 := storage.InboxFilter{EndpointIDs: []string{"ep-1"}}

		wantPages(t, deadLetterPages(t, s, ep1, 100, 0), "one page holding all",
			page(false, "B1", "a3", "b5", "e2", "E4", "e0", "e6"))
		wantPages(t, deadLetterPages(t, s, ep1, 2, 0), "pages of 2",
			page(true, "B1", "a3"), page(true, "b5", "e2"), page(true, "E4", "e0"), page(false, "e6"))
		wantPages(t, deadLetterPages(t, s, ep1, 3, 0), "pages of 3",
			page(true, "B1", "a3", "b5"), page(true, "e2", "E4", "e0"), page(false, "e6"))
		// A page that ends exactly at the last says so: no empty page to ask for.
		wantPages(t, deadLetterPages(t, s, ep1, 7, 0), "a page of exactly all",
			page(false, "B1", "a3", "b5", "e2", "E4", "e0", "e6"))
		wantPages(t, deadLetterPages(t, s, storage.InboxFilter{}, 4, 0), "unfiltered pages of 4",
			page(true, "B1", "a3", "b5", "e2"), page(false, "other", "E4", "e0", "e6"))

		// A key names a place in the order, whether or not a dead letter still has it.
		list := func(after storage.DeadLetterKey, limit int) deadLetterPage {
			t.Helper()
			got, more, err := s.ListDeadLetters(t.Context(), ep1, after, limit, 0)
			must(t, err, fmt.Sprintf("ListDeadLetters after %+v", after))
			return deadLetterPage{inboxIDs(got), more}
		}
		wantPages(t, []deadLetterPage{list(storage.DeadLetterKey{VisibleAt: at(time.Second), InboxID: "a4"}, 2)},
			"after a key between two of a VisibleAt", page(true, "b5", "e2"))
		wantPages(t, []deadLetterPage{list(storage.DeadLetterKey{VisibleAt: at(2*time.Second + time.Microsecond), InboxID: "0"}, 10)},
			"after a key between two VisibleAts", page(false, "E4", "e0", "e6"))
		wantPages(t, []deadLetterPage{list(storage.DeadLetterKey{VisibleAt: at(3 * time.Second), InboxID: "e6"}, 10)},
			"after the last", page(false))
		// Requeuing the last of a page does not move the next page.
		must(t, s.Requeue(t.Context(), "a3", t0), "Requeue a3")
		wantPages(t, []deadLetterPage{list(storage.DeadLetterKey{VisibleAt: at(time.Second), InboxID: "a3"}, 2)},
			"after a requeued one", page(true, "b5", "e2"))
	})

	t.Run("a dead-letter page cut by maxBytes continues where it stopped", func(t *testing.T) {
		s := inboxFixture(t, h)
		sizes := claimSized(t, s, 3000, 1000, 1000, 1000, 1000)
		killAll(t, s, t0)
		wantPages(t, deadLetterPages(t, s, storage.InboxFilter{}, 10, sizes[1]+sizes[2]), "pages of two smaller ones",
			page(true, "d1"), page(true, "d2", "d3"), page(false, "d4", "d5"))
		// Cut by bytes with one left: more, though the page is shorter than limit.
		wantPages(t, deadLetterPages(t, s, storage.InboxFilter{}, 10, sizes[0]+sizes[1]+sizes[2]+sizes[3]),
			"a page one short", page(true, "d1", "d2", "d3", "d4"), page(false, "d5"))
		wantPages(t, deadLetterPages(t, s, storage.InboxFilter{}, 2, 1), "a bound below every size",
			page(true, "d1"), page(true, "d2"), page(true, "d3"), page(true, "d4"), page(false, "d5"))
	})

	t.Run("no dead letters are one empty page with no more", func(t *testing.T) {
		s := inboxFixture(t, h)
		deliver(t, s, "ep-1", "ep-1", "live", at(time.Second))
		wantPages(t, deadLetterPages(t, s, storage.InboxFilter{}, 10, 0), "no dead letters", page(false))
	})
}
