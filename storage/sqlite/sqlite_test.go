package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
	"github.com/hookverify/hookverify/storage/storagetest"
)

// factory gives every test of the suite its own database file.
func factory(t *testing.T) func(t *testing.T) storage.Store {
	path := filepath.Join(t.TempDir(), "hookverify.db")
	return func(t *testing.T) storage.Store {
		t.Helper()
		s, err := sqlite.Open(t.Context(), path)
		if err != nil {
			t.Fatalf("Open(%s): %v", path, err)
		}
		return s
	}
}

func TestConformance(t *testing.T) {
	t.Parallel()
	// Each test has its own file, so the factory is safe to call concurrently.
	storagetest.RunWith(t, factory, storagetest.Options{Parallel: true})
}

// TestConformanceCommittingEachClaim runs the claim categories with group commit off
// (serve --commit-each-claim), where every claim is its own write transaction.
func TestConformanceCommittingEachClaim(t *testing.T) {
	t.Parallel()
	storagetest.RunWith(t, storagetest.CommittingEachClaim(factory), storagetest.Options{Parallel: true,
		Skip: storagetest.ClaimPathOnly("only the claim path changes with group commit off")})
}

func openTemp(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func TestOpenCreatesPrivateWALFile(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	info, err := os.Stat(path)
	if err != nil {
		t.Fatalf("database file: %v", err)
	}
	if mode := info.Mode().Perm(); mode != 0o600 {
		t.Errorf("database file mode %v, want 0600", mode)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// WAL is a property of the file, so a plain connection sees it; the schema is migrated.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	var version int
	if err := db.QueryRow("SELECT max(version) FROM schema_migrations").Scan(&version); err != nil {
		t.Fatalf("schema_migrations: %v", err)
	}
	if version < 6 {
		t.Errorf("schema version %d, want at least 6", version)
	}
}

func TestConnectionSettings(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	want := map[string]string{
		"journal_mode": "wal",
		"synchronous":  "2", // FULL
		"foreign_keys": "1",
		"busy_timeout": "10000",
		"page_size":    strconv.Itoa(sqlite.DefaultPageSize),
	}
	got := sqlite.Pragmas(t.Context(), s)
	for name, w := range want {
		for _, pool := range []string{"writer", "reader"} {
			if g := got[pool+"."+name]; g != w {
				t.Errorf("%s connection: PRAGMA %s = %q, want %q", pool, name, g, w)
			}
		}
	}
	if g := got["reader.query_only"]; g != "1" {
		t.Errorf("reader connection: PRAGMA query_only = %q, want 1", g)
	}
}

func TestOpenOptions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data.db")
	s, err := sqlite.OpenWith(t.Context(), path, sqlite.Options{BusyTimeout: 1500 * time.Millisecond, MaxReaders: 2})
	if err != nil {
		t.Fatalf("OpenWith: %v", err)
	}
	defer s.Close()
	if g := sqlite.Pragmas(t.Context(), s)["writer.busy_timeout"]; g != "1500" {
		t.Errorf("busy_timeout = %q, want 1500", g)
	}
}

// A new file gets the chosen page size; an existing file keeps its own, whatever the option
// says, and works as before.
func TestPageSize(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pageSize := func(path string, opts sqlite.Options) string {
		t.Helper()
		s, err := sqlite.OpenWith(t.Context(), path, opts)
		if err != nil {
			t.Fatalf("OpenWith %+v: %v", opts, err)
		}
		defer s.Close()
		if err := s.CreateEndpoint(t.Context(), storage.Endpoint{ID: "ep-" + strconv.Itoa(opts.PageSize), Provider: "github", DedupeScope: "s", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
			t.Fatalf("CreateEndpoint with %+v: %v", opts, err)
		}
		got := sqlite.Pragmas(t.Context(), s)
		if got["writer.page_size"] != got["reader.page_size"] || got["writer.journal_mode"] != "wal" {
			t.Fatalf("pragmas %v", got)
		}
		return got["writer.page_size"]
	}
	old := filepath.Join(dir, "old.db")
	if g := pageSize(old, sqlite.Options{PageSize: 4096}); g != "4096" {
		t.Errorf("new file with PageSize 4096: page_size %s", g)
	}
	if g := pageSize(old, sqlite.Options{}); g != "4096" {
		t.Errorf("4 KiB file reopened with the default: page_size %s, want it kept", g)
	}
	if g := pageSize(filepath.Join(dir, "big.db"), sqlite.Options{PageSize: 16384}); g != "16384" {
		t.Errorf("new file with PageSize 16384: page_size %s", g)
	}
	for _, bad := range []int{-1, 256, 3000, 131072} {
		_, err := sqlite.OpenWith(t.Context(), filepath.Join(dir, "bad.db"), sqlite.Options{PageSize: bad})
		if !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("PageSize %d: err %v, want ErrInvalid", bad, err)
		}
	}
}

func TestOpenPathWithSpecialCharacters(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data dir?#%20")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "hook verify?x=1.db")
	s, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at the path given: %v", err)
	}
}

func TestOpenRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	s, err := sqlite.Open(t.Context(), "rel.db")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rel.db")); err != nil {
		t.Fatalf("the database is not at the path given: %v", err)
	}
}

func TestOpenRejectsNonFiles(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", ":memory:", "file:x.db?mode=memory"} {
		if _, err := sqlite.Open(t.Context(), path); !errors.Is(err, storage.ErrInvalid) {
			t.Errorf("Open(%q): got %v, want ErrInvalid", path, err)
		}
	}
}

func TestOpenMissingDirectoryIsUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "data.db")
	if _, err := sqlite.Open(t.Context(), path); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Open: got %v, want ErrUnavailable", err)
	}
}

func TestOpenNotADatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "junk.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(t.Context(), path); !errors.Is(err, storage.ErrUnavailable) {
		t.Fatalf("Open: got %v, want ErrUnavailable", err)
	}
}

func TestReopenKeepsSchemaVersion(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	ctx := t.Context()
	e := storage.Endpoint{ID: "ep-1", Provider: "stripe", DedupeScope: "ep-1", CreatedAt: time.Unix(1, 0).UTC(), UpdatedAt: time.Unix(1, 0).UTC()}
	if err := s.CreateEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		if _, err := s.GetEndpoint(ctx, "ep-1"); err != nil {
			t.Fatalf("GetEndpoint after reopen: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT count(*) FROM schema_migrations").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != sqlite.MigrationSteps {
		t.Fatalf("schema_migrations has %d rows, want one per step (%d)", n, sqlite.MigrationSteps)
	}
}

func TestCanceledContextIsUnavailable(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d := storage.Delivery{InboxID: "i", Scope: "s", EventID: "e", EndpointID: "ep", OperationKey: "op"}
	if _, err := s.Claim(ctx, d); !errors.Is(err, storage.ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Claim with canceled context: got %v, want ErrUnavailable and context.Canceled", err)
	}
	if n, err := s.CountDeliveries(t.Context(), ""); err != nil || n != 0 {
		t.Fatalf("CountDeliveries = %d, %v; want 0, nil", n, err)
	}
}

func TestZeroTimesAreInvalidForRetireAndRotate(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	ctx := t.Context()
	now := time.Unix(1_700_000_000, 0).UTC()
	if err := s.CreateEndpoint(ctx, storage.Endpoint{ID: "ep", Provider: "p", DedupeScope: "ep", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	sec := storage.Secret{ID: "s1", EndpointID: "ep", KeyID: "k", Sealed: []byte{1}, CreatedAt: now}
	if err := s.AddSecret(ctx, sec, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RetireSecret(ctx, "ep", "s1", time.Time{}); !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("RetireSecret at zero time: got %v, want ErrInvalid", err)
	}
	sec.ID = "s2"
	if _, err := s.RotateSecret(ctx, sec, time.Time{}, nil); !errors.Is(err, storage.ErrInvalid) {
		t.Errorf("RotateSecret to zero time: got %v, want ErrInvalid", err)
	}
	list, err := s.ListSecrets(ctx, "ep")
	if err != nil || len(list) != 1 || !list[0].RetiredAt.IsZero() {
		t.Fatalf("ListSecrets = %+v, %v; want s1 alone, unretired", list, err)
	}
}

// TestHandlesRaceReadThenWriteTransactions stands for several processes on one file running
// transactions that read before they write (rotations check the endpoint first). Without
// BEGIN IMMEDIATE such a transaction cannot upgrade its read lock once another handle has
// committed, and fails with SQLITE_BUSY however long the busy timeout.
func TestHandlesRaceReadThenWriteTransactions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "data.db")
	ctx := t.Context()
	var stores []*sqlite.Store
	for range 4 {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores = append(stores, s)
	}
	now := time.Unix(1_700_000_000, 0).UTC()
	if err := stores[0].CreateEndpoint(ctx, storage.Endpoint{ID: "ep", Provider: "p", DedupeScope: "ep", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			sec := storage.Secret{ID: fmt.Sprintf("s%02d", i), EndpointID: "ep", KeyID: "k", Sealed: []byte{byte(i)}, CreatedAt: now.Add(time.Duration(i) * time.Second)}
			_, errs[i] = stores[i%len(stores)].RotateSecret(ctx, sec, now.Add(time.Hour), nil)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("rotation %d: %v", i, err)
		}
	}
	list, err := stores[1].ListSecrets(ctx, "ep")
	if err != nil || len(list) != n {
		t.Fatalf("ListSecrets: %d secrets, %v; want %d", len(list), err, n)
	}
}

func BenchmarkClaims(b *testing.B) { storagetest.BenchmarkClaims(b, openBenchStore(b)) }

func BenchmarkLeaseAck(b *testing.B) { storagetest.BenchmarkLeaseAck(b, openBenchStore(b)) }

func BenchmarkAcks(b *testing.B) { storagetest.BenchmarkAcks(b, openBenchStore(b)) }

func openBenchStore(b *testing.B) *sqlite.Store {
	s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "hookverify.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

// TestPreparedStatementsAreBounded: the writer's statement cache keeps at most 256 texts; past
// that, a statement is prepared for one use and closed by its done function.
func TestPreparedStatementsAreBounded(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	ctx := t.Context()
	run := func(text string) (*sql.Stmt, func()) {
		t.Helper()
		stmt, done, err := sqlite.Prepared(s, ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := stmt.QueryRowContext(ctx).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s = %d, %v", text, n, err)
		}
		return stmt, done
	}
	for i := range 300 {
		_, done := run(fmt.Sprintf("SELECT 1 -- %d", i))
		done()
	}
	if got := sqlite.CachedStmts(s); got != 256 {
		t.Errorf("%d statements cached, want 256", got)
	}
	first, done := run("SELECT 1 -- 0")
	done()
	if again, _ := run("SELECT 1 -- 0"); again != first {
		t.Error("a cached text was prepared again")
	}
	extra, done := run("SELECT 1 -- one more")
	done()
	if err := extra.QueryRowContext(ctx).Scan(new(int)); err == nil {
		t.Error("a statement past the bound was not closed by done")
	}
}

// TestOpenRefusesASchemaFromANewerRelease: a file that a later release has migrated (a version
// in schema_migrations this binary does not know) is refused at Open with an error that says
// so, instead of being served by code that does not know what the newer steps changed; README
// asks for one release per file. ErrInvalid: serve stops on it rather than retry for ever.
func TestOpenRefusesASchemaFromANewerRelease(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	newer := sqlite.MigrationSteps + 1
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, newer); err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(t.Context(), path)
	if err == nil {
		s.Close()
		t.Fatal("Open on a file migrated by a newer release succeeded")
	}
	if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), fmt.Sprint(newer)) {
		t.Fatalf("Open on a newer schema: %v, want ErrInvalid naming version %d", err, newer)
	}
}

// TestConcurrentOpensOfANewFile: several processes (here stores, each with its own
// connections, which SQLite locks like processes) starting at once on a file that does not
// exist yet all open it. Before initFile retried its switch to WAL, one of them now and then
// failed with SQLITE_BUSY at once, busy timeout or not (in 4 runs of this test out of 6).
func TestConcurrentOpensOfANewFile(t *testing.T) {
	t.Parallel()
	for round := range 30 {
		path := fmt.Sprintf("%s/new-%d.db", t.TempDir(), round)
		stores := make([]*sqlite.Store, 4)
		errs := make([]error, len(stores))
		var wg sync.WaitGroup
		for i := range stores {
			wg.Go(func() { stores[i], errs[i] = sqlite.Open(t.Context(), path) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: concurrent Open #%d: %v", round, i, err)
			}
			defer stores[i].Close()
		}
	}
}
