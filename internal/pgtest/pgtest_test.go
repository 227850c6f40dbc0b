package pgtest

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

func databaseExists(t *testing.T, c *Cluster, name string) bool {
	t.Helper()
	var exists bool
	err := connect(t, c.URL(adminDatabase)).QueryRow(t.Context(),
		"SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists)
	if err != nil {
		t.Fatalf("look up database %s: %v", name, err)
	}
	return exists
}

func TestNewDatabaseIsFreshAndDropped(t *testing.T) {
	c := Shared(t)
	var names []string
	for range 2 {
		t.Run("database", func(t *testing.T) {
			url := c.NewDatabase(t)
			conn := connect(t, url)
			var name, version string
			if err := conn.QueryRow(t.Context(), "SELECT current_database(), version()").Scan(&name, &version); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(version, "PostgreSQL 15") && c.local != nil {
				t.Errorf("server version %q, want PostgreSQL 15", version)
			}
			var tables int
			if err := conn.QueryRow(t.Context(),
				"SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'").Scan(&tables); err != nil {
				t.Fatal(err)
			}
			if tables != 0 {
				t.Errorf("new database has %d tables, want none", tables)
			}
			if _, err := conn.Exec(t.Context(), "CREATE TABLE t (id BIGINT PRIMARY KEY)"); err != nil {
				t.Fatal(err)
			}
			names = append(names, name)
		})
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("databases %v, want two distinct ones", names)
	}
	// The open connection of each subtest must not keep its database from being dropped.
	for _, name := range names {
		if databaseExists(t, c, name) {
			t.Errorf("database %s still exists after its test ended", name)
		}
	}
}

func TestSharedIsShared(t *testing.T) {
	a, b := Shared(t), Shared(t)
	if a.local != nil && a != b {
		t.Fatal("Shared returned two clusters")
	}
}

func TestURL(t *testing.T) {
	t.Setenv(EnvDatabaseURL, "postgres://u:p@db.example:5432/other?sslmode=disable")
	c := Shared(t)
	if got, want := c.URL("db1"), "postgres://u:p@db.example:5432/db1?sslmode=disable"; got != want {
		t.Fatalf("URL = %q, want %q", got, want)
	}
}

func TestStopAndStartKeepData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a private server")
	}
	c := Start(t)
	url := c.NewDatabase(t)
	if _, err := connect(t, url).Exec(t.Context(), "CREATE TABLE kept (id BIGINT)"); err != nil {
		t.Fatal(err)
	}

	c.Stop(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, url); err == nil {
		_ = conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	c.Stop(t) // stopping twice is harmless

	c.Start(t)
	c.Start(t) // and so is starting twice
	if _, err := connect(t, url).Exec(t.Context(), "INSERT INTO kept VALUES (1)"); err != nil {
		t.Fatalf("table lost across restart: %v", err)
	}
}

func TestSharedClusterCannotBeStopped(t *testing.T) {
	c := Shared(t)
	if c.local == nil {
		t.Skip("external server")
	}
	tb := &recordingTB{TB: t}
	runTB(func() { c.Stop(tb) })
	if !tb.fatal || !c.local.isRunning() {
		t.Fatalf("Stop on the shared cluster: fatal=%v running=%v, want a failure and a running server",
			tb.fatal, c.local.isRunning())
	}
}

func TestMissingPostgresSkipsOnlyOutsideCI(t *testing.T) {
	missing := errors.Join(errNoPostgres)
	broken := errors.New("pgtest: initdb: exit status 1")
	cases := []struct {
		name      string
		ci        string
		err       error
		wantSkip  bool
		wantFatal bool
	}{
		{"missing on a laptop", "", missing, true, false},
		{"missing in CI", "true", missing, false, true},
		{"broken on a laptop", "", broken, false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("CI", c.ci)
			tb := &recordingTB{TB: t}
			runTB(func() { fail(tb, c.err) })
			if tb.skipped != c.wantSkip || tb.fatal != c.wantFatal {
				t.Fatalf("skipped=%v fatal=%v, want skipped=%v fatal=%v", tb.skipped, tb.fatal, c.wantSkip, c.wantFatal)
			}
		})
	}
}

// recordingTB records a skip or failure and ends the goroutine, as testing.T does, without
// failing the real test.
type recordingTB struct {
	testing.TB
	skipped, fatal bool
}

func (r *recordingTB) Helper()                      {}
func (r *recordingTB) Skipf(string, ...any)         { r.skipped = true; runtime.Goexit() }
func (r *recordingTB) Skip(...any)                  { r.skipped = true; runtime.Goexit() }
func (r *recordingTB) Fatalf(string, ...any)        { r.fatal = true; runtime.Goexit() }
func (r *recordingTB) Fatal(...any)                 { r.fatal = true; runtime.Goexit() }
func (r *recordingTB) Errorf(string, ...any)        { r.fatal = true }
func (r *recordingTB) Cleanup(func())               {}
func (r *recordingTB) Name() string                 { return "recording" }
func (r *recordingTB) Logf(format string, a ...any) {}

// runTB runs f in its own goroutine, so that a recorded skip or failure can end it.
func runTB(f func()) {
	var wg sync.WaitGroup
	wg.Go(f)
	wg.Wait()
}
