package crdb

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// pgOnlySQL are constructs PostgreSQL runs and CockroachDB refuses or treats otherwise:
// planner settings, advisory locks, PL/pgSQL blocks, per-column compression, collations
// (CockroachDB's STRING compares bytes already, see bytesOrder).
var pgOnlySQL = regexp.MustCompile(`(?i)set_config|enable_bitmapscan|pg_advisory|DO \$\$|SET COMPRESSION|COLLATE|\bSET LOCAL\b|::regclass`)

// cockroachOnlySQL are constructs CockroachDB runs and PostgreSQL does not: a LIMIT directly
// on DELETE or UPDATE, UPSERT, index hints (table@index), hash-sharded indexes, STRING.
var cockroachOnlySQL = regexp.MustCompile(`(?i)\b(DELETE|UPDATE)\b[^()]*\bLIMIT\b[^()]*$|\bUPSERT\b|\w@\w|USING HASH|\bSTRING\b`)

// TestCockroachDBStatementsAvoidEngineSpecificSQL checks the text of every statement the store
// runs on CockroachDB that can be built without a database: none may use PostgreSQL-only SQL,
// and those both engines run none of CockroachDB's only. (The PostgreSQL tests run them all on
// PostgreSQL; no CockroachDB server is available here, so this is what guards that side.)
func TestCockroachDBStatementsAvoidEngineSpecificSQL(t *testing.T) {
	t.Parallel()
	common := map[string]string{
		"createMigrationsTable":     createMigrationsTable,
		"migrationsTableExists":     migrationsTableExists,
		"recordMigration":           recordMigration,
		"claimSQL":                  claimSQL,
		"existingClaimSQL":          existingClaimSQL,
		"claimBatchSQL":             claimBatchSQL,
		"existingClaimsSQL":         existingClaimsSQL,
		"requeueSQL":                requeueSQL,
		"discardSQL":                discardSQL,
		"deadLetterExhaustedSQL":    deadLetterExhaustedSQL,
		"deadLetterExpiredBatchSQL": deadLetterExpiredBatchSQL,
		"sweepAckedSQL":             sweepAckedSQL,
		"sweepClaimsSQL":            sweepClaimsSQL,
		"ackBatchSQL":               ackBatchSQL,
	}
	for _, m := range migrations {
		common["migration "+m.description] = m.sql
	}
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, f := range []storage.InboxFilter{{}, {EndpointIDs: []string{"ep-1"}},
		{EndpointIDs: []string{"ep-1", "ep-2"}, Scopes: []string{"s"}}} {
		req := storage.LeaseRequest{Max: 5, MaxAttempts: 3, Visibility: time.Minute, LeaseToken: "tok",
			Now: now, MaxBytes: 1 << 20, InboxFilter: f}
		dead, _ := deadLetterExpired(req)
		lease, _ := leaseLeasable(req)
		common["deadLetterExpired"+strings.Join(f.EndpointIDs, ",")] = dead
		common["leaseLeasable"+strings.Join(f.EndpointIDs, ",")] = lease
		for _, after := range []storage.DeadLetterKey{{}, {VisibleAt: now, InboxID: "inbox-1"}} {
			sql, _ := listDeadLetters(EngineCockroachDB, f, after, 10, 0)
			common["listDeadLetters "+after.InboxID+strings.Join(f.EndpointIDs, ",")] = sql
		}
	}
	for name, sql := range common {
		if m := pgOnlySQL.FindString(sql); m != "" {
			t.Errorf("%s runs on CockroachDB but uses PostgreSQL-only %q:\n%s", name, m, sql)
		}
		if m := cockroachOnlySQL.FindString(sql); m != "" {
			t.Errorf("%s runs on PostgreSQL too but uses CockroachDB-only %q:\n%s", name, m, sql)
		}
	}
	for _, m := range cockroachOnlyMigrations {
		if match := pgOnlySQL.FindString(m.sql); match != "" {
			t.Errorf("CockroachDB-only migration %d uses PostgreSQL-only %q", m.version, match)
		}
	}
	if got := EngineCockroachDB.bytesOrder("id"); got != "id" {
		t.Errorf("bytesOrder on CockroachDB = %q, want the bare column", got)
	}
	// The guards themselves: the PostgreSQL-only statements are caught.
	for _, sql := range []string{noBitmapScans, postgresOnlyMigrations[0].sql, postgresOnlyMigrations[1].sql,
		EnginePostgreSQL.bytesOrder("id")} {
		if !pgOnlySQL.MatchString(sql) {
			t.Errorf("pgOnlySQL misses %q", sql)
		}
	}
	if !cockroachOnlySQL.MatchString("DELETE FROM inbox WHERE state = 'acked' LIMIT 10") {
		t.Error("cockroachOnlySQL misses DELETE ... LIMIT")
	}
}
