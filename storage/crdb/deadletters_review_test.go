package crdb

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestDeadLetterPagesIgnoreTheDatabaseCollation: the page's last delivery, whose key the next
// page starts after, is the last by id bytes (sortLeased); on a database whose collation
// orders ids otherwise ("a3" before "B1"), picking and comparing by the collation listed "B1"
// on two pages. The id column is given a language's collation, as a database created with
// one gives every text column.
func TestDeadLetterPagesIgnoreTheDatabaseCollation(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	conn := connect(t, url)
	exec(t, conn, `ALTER TABLE inbox ALTER COLUMN id TYPE TEXT COLLATE "und-x-icu"`)
	ids := []string{"b5", "B1", "a3", "A2"}
	for i, id := range ids {
		d := delivery(fmt.Sprintf("evt-%d", i), id)
		if r, err := s.Claim(t.Context(), d); err != nil || !r.Accepted {
			t.Fatalf("Claim %s = %+v, %v", id, r, err)
		}
	}
	now := base.Add(time.Hour)
	leased, err := leaseDeliveries(t, s, storage.LeaseRequest{Max: 10, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok", Now: now})
	if err != nil || len(leased) != len(ids) {
		t.Fatalf("Lease = %d, %v", len(leased), err)
	}
	for _, d := range leased {
		if _, err := s.Nack(t.Context(), d.InboxID, "tok", now, 1, "", now); err != nil {
			t.Fatalf("Nack %s: %v", d.InboxID, err)
		}
	}
	var (
		got   []string
		after storage.DeadLetterKey
	)
	for range len(ids) + 1 {
		page, more, err := s.ListDeadLetters(t.Context(), storage.InboxFilter{}, after, 2, 0)
		if err != nil {
			t.Fatalf("ListDeadLetters after %+v: %v", after, err)
		}
		for _, d := range page {
			got = append(got, d.InboxID)
		}
		if !more || len(page) == 0 {
			break
		}
		after = storage.DeadLetterKeyOf(page[len(page)-1])
	}
	if want := []string{"A2", "B1", "a3", "b5"}; !slices.Equal(got, want) {
		t.Fatalf("pages of 2 listed %q, want %q (by bytes, each once)", got, want)
	}
}
