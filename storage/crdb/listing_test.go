package crdb

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestListingPagesIgnoreTheDatabaseCollation: a page of endpoints or audit events is continued
// after its last id by bytes (the order the server's page tokens and the other store use); on
// a database whose collation orders ids otherwise ("a" before "B", punctuation ignored),
// picking the page by the collation listed some on two pages and others on none. The id
// columns are given a language's collation, as a database created with one gives every text
// column.
func TestListingPagesIgnoreTheDatabaseCollation(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	conn := connect(t, url)
	exec(t, conn, `ALTER TABLE endpoints ALTER COLUMN id TYPE TEXT COLLATE "und-x-icu"`)
	exec(t, conn, `ALTER TABLE audit_events ALTER COLUMN id TYPE TEXT COLLATE "und-x-icu"`)
	ids := []string{"b", "A-b", "a.B", "a_c", "B", "a", "a-c", "_x", "9"}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, id := range ids {
		ev := storage.AuditEvent{ID: id, At: at, Action: "endpoint.create", EndpointID: id}
		e := storage.Endpoint{ID: id, Provider: "stripe", DedupeScope: id, MaxBodyBytes: 1, Options: map[string]string{}, CreatedAt: at, UpdatedAt: at}
		if err := s.CreateEndpoint(storage.WithAuditEvent(t.Context(), ev), e); err != nil {
			t.Fatalf("CreateEndpoint %s: %v", id, err)
		}
	}
	want := slices.Sorted(slices.Values(ids))
	for _, limit := range []int{2, 3} {
		var endpoints, events []string
		after := ""
		for range len(ids) {
			page, err := s.ListEndpointsPage(t.Context(), after, limit)
			if err != nil {
				t.Fatalf("ListEndpointsPage: %v", err)
			}
			for _, e := range page {
				endpoints = append(endpoints, e.ID)
			}
			if len(page) < limit {
				break
			}
			after = page[len(page)-1].ID
		}
		f := storage.AuditFilter{Limit: limit}
		for range len(ids) {
			page, err := s.ListAuditEvents(t.Context(), f)
			if err != nil {
				t.Fatalf("ListAuditEvents: %v", err)
			}
			for _, ev := range page {
				events = append(events, ev.ID)
			}
			if len(page) < limit {
				break
			}
			f.After = storage.AuditKeyOf(page[len(page)-1])
		}
		if !slices.Equal(endpoints, want) {
			t.Errorf("endpoints by pages of %d: %q, want %q", limit, endpoints, want)
		}
		if !slices.Equal(events, want) {
			t.Errorf("audit events by pages of %d: %q, want %q", limit, events, want)
		}
	}
}

// TestEndpointPagesUseTheByteOrderIndex: ids are ordered with COLLATE "C", which the primary
// key (in the database's collation) cannot serve; without postgresOnlyMigrations' index every
// page of a listing read and sorted every endpoint.
func TestEndpointPagesUseTheByteOrderIndex(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	open(t, url)
	conn := connect(t, url)
	exec(t, conn, `SET enable_seqscan = off`)
	rows, err := conn.Query(t.Context(), `EXPLAIN (FORMAT TEXT) SELECT `+endpointColumns+
		` FROM endpoints WHERE id COLLATE "C" > $1 ORDER BY id COLLATE "C" LIMIT $2`, "a", int64(10))
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if !strings.Contains(plan, "endpoints_id_bytes_idx") {
		t.Errorf("plan of a page of endpoints does not use endpoints_id_bytes_idx:\n%s", plan)
	}
}
