package crdb

import (
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// inboxCountTriggerSteps are the PostgreSQL-only steps of d05543b as that build ran them
// (reverted by 8897d54): a database it migrated holds what they made and records them.
var inboxCountTriggerSteps = []migration{
	{2_000_001, "create inbox_counts: unfinished deliveries by endpoint, as last folded",
		`CREATE TABLE inbox_counts (
	endpoint_id TEXT PRIMARY KEY,
	pending BIGINT NOT NULL,
	leased BIGINT NOT NULL,
	dead BIGINT NOT NULL
)`},
	{2_000_002, "create inbox_count_deltas: changes to inbox_counts not yet folded in",
		`CREATE TABLE inbox_count_deltas (
	endpoint_id TEXT NOT NULL,
	pending BIGINT NOT NULL,
	leased BIGINT NOT NULL,
	dead BIGINT NOT NULL
)`},
	{2_000_003, "create the function recording how a statement changed the inbox counts",
		`CREATE FUNCTION hookverify_inbox_count_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- Old rows count against their endpoint, new rows for it; endpoints left unchanged (an
	-- ack, a lease extended) record nothing.
	IF TG_OP = 'INSERT' THEN
		INSERT INTO inbox_count_deltas
		SELECT endpoint_id, count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'leased'),
			count(*) FILTER (WHERE state = 'dead')
		FROM new_rows WHERE state IN ('pending', 'leased', 'dead') GROUP BY endpoint_id;
	ELSIF TG_OP = 'DELETE' THEN
		INSERT INTO inbox_count_deltas
		SELECT endpoint_id, -count(*) FILTER (WHERE state = 'pending'), -count(*) FILTER (WHERE state = 'leased'),
			-count(*) FILTER (WHERE state = 'dead')
		FROM old_rows WHERE state IN ('pending', 'leased', 'dead') GROUP BY endpoint_id;
	ELSE
		INSERT INTO inbox_count_deltas
		SELECT endpoint_id, sum(pending), sum(leased), sum(dead) FROM (
			SELECT endpoint_id, (state = 'pending')::int AS pending, (state = 'leased')::int AS leased,
				(state = 'dead')::int AS dead FROM new_rows
			UNION ALL
			SELECT endpoint_id, -(state = 'pending')::int, -(state = 'leased')::int, -(state = 'dead')::int FROM old_rows
		) AS changes
		GROUP BY endpoint_id HAVING sum(pending) <> 0 OR sum(leased) <> 0 OR sum(dead) <> 0;
	END IF;
	RETURN NULL;
END
$$`},
	{2_000_004, "count the inbox's inserts", `CREATE TRIGGER inbox_count_insert AFTER INSERT ON inbox
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hookverify_inbox_count_change()`},
	{2_000_005, "count the inbox's updates", `CREATE TRIGGER inbox_count_update AFTER UPDATE ON inbox
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION hookverify_inbox_count_change()`},
	{2_000_006, "count the inbox's deletes", `CREATE TRIGGER inbox_count_delete AFTER DELETE ON inbox
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION hookverify_inbox_count_change()`},
	// The triggers' lock on inbox (SHARE ROW EXCLUSIVE, until this run commits) keeps every
	// writer out from here, so the count below misses nothing and nothing is counted twice.
	{2_000_007, "count the unfinished deliveries already in the inbox", `INSERT INTO inbox_count_deltas
	SELECT endpoint_id, count(*) FILTER (WHERE state = 'pending'), count(*) FILTER (WHERE state = 'leased'),
		count(*) FILTER (WHERE state = 'dead')
	FROM inbox WHERE state IN ('pending', 'leased', 'dead') GROUP BY endpoint_id`},
}

// TestOpenCleansUpTheRevertedInboxCountTriggers: a database migrated by d05543b, whose
// PostgreSQL-only steps 2_000_001-2_000_007 (inbox counts kept by triggers) were reverted and
// their numbers then taken by other steps, must open under this release: the triggers gone
// (they went on writing a row per inbox statement into a table nothing reads), and today's
// step 2_000_001 applied, rather than refused as "migrated by a newer release".
func TestOpenCleansUpTheRevertedInboxCountTriggers(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	s := open(t, url)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to the schema of d05543b: the common steps, none of today's PostgreSQL-only ones,
	// and that build's own.
	conn := connect(t, url)
	exec(t, conn, "DROP INDEX endpoints_id_bytes_idx")
	exec(t, conn, "DELETE FROM schema_migrations WHERE version >= 2000000")
	for _, m := range inboxCountTriggerSteps {
		exec(t, conn, m.sql)
		exec(t, conn, recordMigration, m.version, m.description)
	}

	s, err := Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open on a database migrated by d05543b: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	d := storage.Delivery{Scope: "s", EventID: "e1", InboxID: "in-1", OperationKey: "op-1", EndpointID: "ep",
		SecretID: "sec", Method: "POST", URL: "https://example.com/", Headers: []storage.Header{{Name: "h", Value: "v"}}, Body: []byte("b"),
		ReceivedAt: time.Now()}
	mustClaim(t, s, d, true)

	var triggers int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM pg_trigger
		WHERE tgrelid = 'inbox'::regclass AND NOT tgisinternal`).Scan(&triggers); err != nil {
		t.Fatal(err)
	}
	if triggers != 0 {
		t.Errorf("%d triggers left on inbox", triggers)
	}
	for _, name := range []string{"inbox_counts", "inbox_count_deltas", "endpoints_id_bytes_idx"} {
		var exists bool
		if err := conn.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", name).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if want := name == "endpoints_id_bytes_idx"; exists != want {
			t.Errorf("%s exists: %t, want %t", name, exists, want)
		}
	}
	rows, err := conn.Query(t.Context(), "SELECT version, description FROM schema_migrations WHERE version >= 2000000 ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for rows.Next() {
		var v int64
		var desc string
		if err := rows.Scan(&v, &desc); err != nil {
			t.Fatal(err)
		}
		got = append(got, desc)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range postgresOnlyMigrations {
		want = append(want, m.description)
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("recorded PostgreSQL-only steps %q, want %q", got, want)
	}
}
