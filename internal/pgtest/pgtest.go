// Package pgtest gives tests a real, throwaway PostgreSQL server and a fresh database per test.
//
// A test asks for a cluster with Shared (one server per test binary, the usual choice) or Start
// (a private server, for tests that stop and restart it), then calls NewDatabase for an empty
// database that is dropped when the test ends:
//
//	func TestSomething(t *testing.T) {
//		url := pgtest.Shared(t).NewDatabase(t)
//		store, err := crdb.Open(t.Context(), url)
//		...
//	}
//
// If HOOKVERIFY_TEST_DATABASE_URL is set, every cluster is that server and nothing is started;
// Stop and Start then skip the test. Otherwise the package uses initdb and pg_ctl from PATH or
// from /usr/lib/postgresql/*/bin (or from HOOKVERIFY_TEST_PG_BINDIR), as the postgres user
// when the test runs as root because initdb refuses root. initdb runs once per machine into a
// cached template that each server copies into its own temporary directory. The server listens
// on a free port of 127.0.0.1 and runs with fsync off, because unit tests do not survive power
// loss anyway; set HOOKVERIFY_TEST_PG_FSYNC=on to test with durable writes.
//
// When no PostgreSQL can be found the test is skipped, except when CI=true: in CI nothing may
// be skipped silently, so the test fails.
//
// Every started server is watched by a small shell process that stops the server and removes
// its directory when the test binary exits for any reason (a panic, a timeout, a kill), so no
// TestMain is needed and nothing is left behind.
package pgtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Environment variables that change how clusters are provided.
const (
	// EnvDatabaseURL names an existing server to use instead of starting one. Its database
	// part is replaced by each test's database; the user must be allowed to create databases.
	EnvDatabaseURL = "HOOKVERIFY_TEST_DATABASE_URL"
	// EnvBinDir names the folder holding initdb and pg_ctl, overriding the search.
	EnvBinDir = "HOOKVERIFY_TEST_PG_BINDIR"
	// EnvFsync set to "on" starts servers with fsync and full-page writes on.
	EnvFsync = "HOOKVERIFY_TEST_PG_FSYNC"
)

// adminDatabase is the database administrative statements connect to. It is never the
// template, because CREATE DATABASE fails while anyone is connected to its template.
const adminDatabase = "postgres"

// errNoPostgres marks the one failure a developer machine may skip: no server binaries.
var errNoPostgres = errors.New("pgtest: no PostgreSQL server binaries found")

// Cluster is a PostgreSQL server for tests: one started by this package or the external
// server named by HOOKVERIFY_TEST_DATABASE_URL. Its methods are safe for concurrent use.
type Cluster struct {
	base      url.URL // connection URL; its path is replaced by a database name
	shared    bool
	cockroach atomic.Bool // the external server is CockroachDB; it drops databases differently

	local *localServer // nil for an external server
	seq   atomic.Int64 // numbers the databases this cluster creates

	spares      chan string // databases made ahead of need; nil but on the shared local cluster
	startSpares sync.Once
}

// Start returns a new cluster for tb alone, stopped and removed when tb ends. Use it for tests
// that stop and restart the server; other tests should use the cheaper Shared cluster.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	if c, ok := external(tb); ok {
		return c
	}
	srv, err := startLocal()
	if err != nil {
		fail(tb, err)
	}
	tb.Cleanup(func() {
		if err := srv.destroy(); err != nil {
			tb.Errorf("pgtest: %v", err)
		}
	})
	return newLocalCluster(srv, false)
}

var shared struct {
	once    sync.Once
	cluster *Cluster
	err     error
}

// Shared returns the cluster every test of the binary shares, starting it on first use. It
// is stopped and removed when the test binary exits. Tests must not stop it.
func Shared(tb testing.TB) *Cluster {
	tb.Helper()
	if c, ok := external(tb); ok {
		return c
	}
	shared.once.Do(func() {
		srv, err := startLocal()
		if err != nil {
			shared.err = err
			return
		}
		shared.cluster = newLocalCluster(srv, true)
		shared.cluster.spares = make(chan string, 1)
	})
	if shared.err != nil {
		fail(tb, shared.err)
	}
	return shared.cluster
}

func newLocalCluster(srv *localServer, isShared bool) *Cluster {
	return &Cluster{
		base: url.URL{
			Scheme:   "postgres",
			User:     url.User("postgres"),
			Host:     net.JoinHostPort("127.0.0.1", strconv.Itoa(srv.port)),
			RawQuery: "sslmode=disable",
		},
		shared: isShared,
		local:  srv,
	}
}

// external returns the cluster for EnvDatabaseURL, if it is set.
func external(tb testing.TB) (*Cluster, bool) {
	tb.Helper()
	raw := os.Getenv(EnvDatabaseURL)
	if raw == "" {
		return nil, false
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		tb.Fatalf("pgtest: %s must be a postgres:// URL", EnvDatabaseURL)
	}
	return &Cluster{base: *u, shared: true}, true
}

// fail ends the test because no server is available: a skip when the binaries are missing on
// a developer machine, a failure in CI or when a server was found but would not start.
func fail(tb testing.TB, err error) {
	tb.Helper()
	if errors.Is(err, errNoPostgres) && os.Getenv("CI") != "true" {
		tb.Skipf("%v; install PostgreSQL 15 or set %s (under CI=true this fails instead)", err, EnvDatabaseURL)
	}
	tb.Fatalf("%v", err)
}

// URL returns the connection URL of the named database on the cluster.
func (c *Cluster) URL(dbname string) string {
	u := c.base
	u.Path = "/" + dbname
	u.RawPath = ""
	return u.String()
}

// NewDatabase creates an empty database with a unique name and returns its URL. The database
// is dropped, with any connections still open to it, when tb ends.
func (c *Cluster) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name, err := c.takeSpare()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		if c.local != nil && !c.local.isRunning() {
			// The test stopped a private server and left it stopped; destroying the
			// server removes the database with it.
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		drop := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"
		if c.cockroach.Load() {
			drop = "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " CASCADE"
		}
		if err := c.admin(ctx, drop); err != nil {
			tb.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return c.URL(name)
}

// takeSpare returns a new database: one created ahead of need if there is one, else one
// created now. CREATE DATABASE copies a template of several megabytes and takes a good part of
// a second on a busy machine, so the shared cluster keeps one spare, made while the test that
// took the previous one runs. Only the shared local cluster does this: its spares vanish with
// it, where an external server would keep them.
func (c *Cluster) takeSpare() (string, error) {
	if c.spares != nil {
		c.startSpares.Do(func() { go c.makeSpares() })
		select {
		case name := <-c.spares:
			return name, nil
		default:
		}
	}
	return c.createDatabase()
}

// makeSpares keeps a spare database ready for as long as creating one works.
func (c *Cluster) makeSpares() {
	for {
		name, err := c.createDatabase()
		if err != nil {
			// NewDatabase creates databases itself and reports the error to its test.
			return
		}
		c.spares <- name
	}
}

func (c *Cluster) createDatabase() (string, error) {
	var random [4]byte
	_, _ = rand.Read(random[:])
	// The random part keeps names unique among test binaries sharing an external server.
	name := fmt.Sprintf("pgtest_%d_%s", c.seq.Add(1), hex.EncodeToString(random[:]))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, nil
}

// admin runs one statement on the cluster's administrative database.
func (c *Cluster) admin(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL(adminDatabase))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if c.local == nil {
		var version string
		if err := conn.QueryRow(ctx, "SELECT version()").Scan(&version); err != nil {
			return err
		}
		c.cockroach.Store(strings.HasPrefix(version, "CockroachDB"))
	}
	_, err = conn.Exec(ctx, sql)
	return err
}

// Stop stops the server, as an outage would, with a fast shutdown that closes every
// connection. Only a private cluster from Start can be stopped: the test fails on the shared
// cluster and is skipped on an external server.
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	c.mustOwn(tb, "stop")
	if err := c.local.stop(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
}

// Start starts a stopped server again, on the same port and data, and waits until it accepts
// connections. It does nothing if the server runs.
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	c.mustOwn(tb, "start")
	if err := c.local.start(); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
}

func (c *Cluster) mustOwn(tb testing.TB, what string) {
	tb.Helper()
	switch {
	case c.local == nil && os.Getenv("CI") == "true":
		// CI must not lose the outage tests to a stray setting.
		tb.Fatalf("pgtest: cannot %s the external server named by %s; under CI=true leave it unset", what, EnvDatabaseURL)
	case c.local == nil:
		tb.Skipf("pgtest: cannot %s the external server named by %s", what, EnvDatabaseURL)
	case c.shared:
		tb.Fatalf("pgtest: cannot %s the shared cluster, other tests use it; use pgtest.Start", what)
	}
}

// localServer is a server this package started.
type localServer struct {
	binDir  string
	dir     string // owns everything below; removed at the end
	dataDir string
	logFile string
	port    int
	cred    *syscall.Credential // the postgres user when running as root
	durable bool

	mu       sync.Mutex
	running  bool
	watchdog *exec.Cmd
	wdInput  io.WriteCloser // closing it tells the watchdog to clean up
}

// startLocal creates, starts and watches a new server.
func startLocal() (srv *localServer, err error) {
	binDir, err := findBinDir()
	if err != nil {
		return nil, err
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	srv = &localServer{
		binDir:  binDir,
		dir:     dir,
		dataDir: filepath.Join(dir, "data"),
		logFile: filepath.Join(dir, "postgres.log"),
		cred:    cred,
		durable: os.Getenv(EnvFsync) == "on",
	}
	defer func() {
		if err != nil {
			_ = srv.destroy()
		}
	}()
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: give %s to the postgres user: %w", dir, err)
		}
	}
	if err := srv.startWatchdog(); err != nil {
		return nil, err
	}
	template, err := srv.templateDataDir()
	if err != nil {
		return nil, err
	}
	// cp -a keeps the postgres user's ownership and the 0700 mode the server insists on.
	if out, err := exec.Command("cp", "-a", template, srv.dataDir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: copy the template data directory: %w\n%s", err, out)
	}
	// Another process may take the free port between our probe and the server's bind; a
	// new port on the next attempt makes that race harmless.
	for attempt := 1; ; attempt++ {
		if srv.port, err = freePort(); err != nil {
			return nil, err
		}
		if err = srv.start(); err == nil || attempt == 3 {
			return srv, err
		}
	}
}

// templateDataDir returns a data directory made by initdb, which every new server copies:
// initdb takes seconds on a busy machine, a copy a fraction of one. The template is made once
// per machine, server build and initdb options, in a folder under the temporary directory,
// and is never started, so it stays pristine. Concurrent test binaries race to make it
// safely: each runs initdb in a private folder and renames it into place; a loser uses the
// winner's.
func (s *localServer) templateDataDir() (string, error) {
	args := []string{"-A", "trust", "-U", "postgres", "-E", "UTF8", "--locale=C"}
	if !s.durable {
		args = append(args, "--no-sync")
	}
	server, err := os.Stat(filepath.Join(s.binDir, "postgres"))
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	key := sha256.Sum256(fmt.Appendf(nil, "%s|%d|%d|%q|%d", s.binDir, server.Size(), server.ModTime().UnixNano(),
		args, os.Geteuid()))
	root := filepath.Join(os.TempDir(), "hookverify-pgtest-templates")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	template := filepath.Join(root, hex.EncodeToString(key[:8]))
	if _, err := os.Stat(filepath.Join(template, "PG_VERSION")); err == nil {
		return template, nil
	}
	work, err := os.MkdirTemp(root, "initdb-")
	if err != nil {
		return "", fmt.Errorf("pgtest: %w", err)
	}
	defer os.RemoveAll(work)
	if s.cred != nil {
		if err := os.Chown(work, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return "", fmt.Errorf("pgtest: %w", err)
		}
	}
	data := filepath.Join(work, "data")
	if out, err := s.command("initdb", append([]string{"-D", data}, args...)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	if err := os.Rename(data, template); err != nil {
		if _, statErr := os.Stat(filepath.Join(template, "PG_VERSION")); statErr != nil {
			return "", fmt.Errorf("pgtest: install the template data directory: %w", err)
		}
	}
	return template, nil
}

// findBinDir returns the folder with initdb and pg_ctl.
func findBinDir() (string, error) {
	if dir := os.Getenv(EnvBinDir); dir != "" {
		return dir, nil
	}
	if path, err := exec.LookPath("pg_ctl"); err == nil {
		// Resolve symlinks so that initdb is looked for beside the real pg_ctl.
		if real, err := filepath.EvalSymlinks(path); err == nil {
			path = real
		}
		dir := filepath.Dir(path)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	// Debian and Ubuntu keep the server binaries off PATH, in a folder per major version.
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	slices.SortFunc(matches, func(a, b string) int { return versionOf(b) - versionOf(a) })
	for _, m := range matches {
		dir := filepath.Dir(m)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("%w on PATH or in /usr/lib/postgresql/*/bin", errNoPostgres)
}

// versionOf extracts the major version of /usr/lib/postgresql/VERSION/bin/pg_ctl.
func versionOf(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// serverCredential returns the postgres user's identity when running as root, since initdb
// and postgres refuse to run as root, and nil otherwise.
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root needs a postgres user to run the server: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: postgres gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// command prepares a server binary to run as the server's user.
func (s *localServer) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(s.binDir, name), args...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// startWatchdog starts the process that cleans up if the test binary dies. It waits for its
// standard input to close, which happens when we close it or when our process ends however
// it ends, then stops the server and removes the directory. It runs in its own process group
// so that an interrupt from the terminal does not kill it before it has cleaned up, and its
// output goes nowhere so that go test does not wait for it.
func (s *localServer) startWatchdog() error {
	const script = `cat >/dev/null; "$@" >/dev/null 2>&1; rm -rf "$PGTEST_DIR"`
	pgCtl := filepath.Join(s.binDir, "pg_ctl")
	cmd := exec.Command("/bin/sh", "-c", script, "pgtest-watchdog",
		pgCtl, "-D", s.dataDir, "-m", "fast", "-w", "-t", "60", "stop")
	cmd.Env = append(os.Environ(), "PGTEST_DIR="+s.dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("pgtest: watchdog: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: watchdog: %w", err)
	}
	s.watchdog, s.wdInput = cmd, in
	return nil
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *localServer) isRunning() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running
}

// start starts the server and waits until it accepts connections.
func (s *localServer) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	opts := []string{
		"-p", strconv.Itoa(s.port),
		"-k", s.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=300",
	}
	if !s.durable {
		opts = append(opts, "-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off")
	}
	// pg_ctl needs the server options as one argument; none of ours contains a space.
	cmd := s.command("pg_ctl", "-D", s.dataDir, "-l", s.logFile, "-w", "-t", "60",
		"-o", strings.Join(opts, " "), "start")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl start on port %d: %w\n%s\nserver log:\n%s", s.port, err, out, s.logTail())
	}
	s.running = true
	return nil
}

// stop shuts the server down, closing every connection, and waits until it has exited.
func (s *localServer) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	if out, err := s.command("pg_ctl", "-D", s.dataDir, "-m", "fast", "-w", "-t", "60", "stop").CombinedOutput(); err != nil {
		return fmt.Errorf("pg_ctl stop: %w\n%s", err, out)
	}
	s.running = false
	return nil
}

// destroy stops the server and removes its directory, then releases the watchdog.
func (s *localServer) destroy() error {
	err := s.stop()
	if rmErr := os.RemoveAll(s.dir); rmErr != nil {
		err = errors.Join(err, rmErr)
	}
	if s.watchdog != nil {
		_ = s.wdInput.Close()
		_ = s.watchdog.Wait()
	}
	return err
}

// logTail returns the end of the server log, which says why a start failed.
func (s *localServer) logTail() string {
	data, err := os.ReadFile(s.logFile)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	const max = 4 << 10
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(bytes.TrimSpace(data))
}
