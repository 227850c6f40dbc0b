package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/hookverify/hookverify/internal/ascii"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/crdb"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// masterKeyEnv names the environment variable holding the base64 master key.
const masterKeyEnv = "HOOKVERIFY_MASTER_KEY"

// oldMasterKeysEnv names the environment variable holding earlier master keys (base64,
// comma-separated) that still open secrets sealed before a master-key rotation.
const oldMasterKeysEnv = "HOOKVERIFY_OLD_MASTER_KEYS"

// storeConfig selects and locates the database and the master key.
type storeConfig struct {
	dataDir       string
	databaseURL   string
	masterKeyFile string
	// oldMasterKeyFiles hold earlier master keys, kept until `hookverify rekey` has moved every
	// secret to the current one.
	oldMasterKeyFiles multiFlag
	// generatedKey is the path of the master key file keyring generated, when it did.
	generatedKey string
	// keyHold holds the data directory's key file while this process uses its key, so that
	// another start that generated it and fails does not move it aside (see close).
	keyHold *secretbox.KeyFileHold
	// log, when set, hears what the store reports while it opens (a migration's wait).
	log *slog.Logger
}

func (c *storeConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", "./hookverify-data", "directory of the embedded SQLite store (and its generated master key)")
	fs.StringVar(&c.databaseURL, "database-url", "", "CockroachDB or PostgreSQL URL (postgres://... or key=value); replaces the embedded store. What it leaves out comes from libpq's variables ($PGHOST, $PGUSER, $PGPASSWORD, ...) and ~/.pgpass: a password there stays out of the process list, where any local user reads a command line")
	fs.StringVar(&c.masterKeyFile, "master-key-file", "", "file holding the base64 master key (default: $"+masterKeyEnv+", or a generated key in the data dir for the embedded store)")
	fs.Var(&c.oldMasterKeyFiles, "old-master-key-file", "file holding an earlier master key that still decrypts, during a master-key rotation (repeatable; also $"+oldMasterKeysEnv+", comma-separated base64)")
}

// openStore opens and migrates the configured store.
func (c *storeConfig) openStore(ctx context.Context) (storage.Store, error) {
	if c.databaseURL != "" {
		return crdb.Open(ctx, c.databaseURL, crdb.WithLogger(c.log))
	}
	if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	return sqlite.Open(ctx, filepath.Join(c.dataDir, "hookverify.db"))
}

// keyring loads the master key: the key file, else the environment variable, else (embedded
// store only) a key file generated in the data dir, with a warning that it must be backed up.
func (c *storeConfig) keyring(log *slog.Logger) (*secretbox.Keyring, error) {
	// The old keys first: a bad one refuses the start before a new key file is generated in
	// the data directory, which a failed start should leave as it found it.
	older, err := c.oldKeys()
	if err != nil {
		return nil, err
	}
	for _, path := range c.oldMasterKeyFiles {
		warnOpenKeyFile(log, "--old-master-key-file", path)
	}
	var key []byte
	// The flag before the variable, which is only its default: the master-key runbook restarts
	// with --master-key-file new.key, and an old key left in the environment must not win.
	switch {
	case c.masterKeyFile != "":
		key, err = secretbox.ReadKeyFile(c.masterKeyFile)
		if err != nil {
			// Named as the flag, as --old-master-key-file's errors are.
			err = fmt.Errorf("--master-key-file: %w", err)
		}
		warnOpenKeyFile(log, "--master-key-file", c.masterKeyFile)
	case os.Getenv(masterKeyEnv) != "":
		key, err = secretbox.ParseKey(os.Getenv(masterKeyEnv))
		if err != nil {
			err = fmt.Errorf("$%s: %w", masterKeyEnv, err)
		}
	case c.databaseURL == "":
		path := filepath.Join(c.dataDir, "master.key")
		// A crash between writing a generated key to its temporary file and linking it into
		// place leaves that file, a key in plain text, beside master.key: removed once old
		// enough not to be another instance's, starting at this moment.
		removed, rmErr := secretbox.RemoveStaleTempKeyFiles(path, secretbox.StaleTempKeyAge)
		if len(removed) > 0 {
			log.Warn("removed temporary master key files a start that crashed while generating the key left behind", "paths", removed)
		}
		if rmErr != nil {
			log.Warn("temporary master key files a crashed start left behind could not be removed: remove them by hand (each holds a key in plain text)", "err", rmErr)
		}
		var created bool
		key, created, c.keyHold, err = secretbox.LoadOrCreateHeldKeyFile(path)
		if created {
			c.generatedKey = path
			log.Warn("generated a new master key; back it up: without it the stored secrets cannot be decrypted", "path", path)
		} else {
			warnOpenKeyFile(log, "--data-dir", path)
		}
		if err != nil {
			// The key file is the data dir's: the flag to fix is --data-dir (or to give a key
			// with --master-key-file), not the key file secretbox names.
			err = fmt.Errorf("--data-dir %s: %w", c.dataDir, err)
		}
	default:
		err = usagef("a master key is required with --database-url: set $%s or --master-key-file", masterKeyEnv)
	}
	if err != nil {
		return nil, err
	}
	return secretbox.NewKeyring(key, older...)
}

// warnOpenKeyFile warns when the master key file at path can be read or written by others
// than its owner: whoever reads it can open every stored secret, whoever writes it can make
// the next start seal new secrets under a key of theirs. A warning, not a refusal: a key
// mounted from a Kubernetes secret is 0644 unless its defaultMode says otherwise.
func warnOpenKeyFile(log *slog.Logger, flag, path string) {
	if runtime.GOOS == "windows" {
		return // no Unix modes to read
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm()&0o077 == 0 {
		return
	}
	log.Warn("the master key file can be read or written by others than its owner: whoever reads it can open every stored secret; chmod 600 it (or set defaultMode 0400 on a Kubernetes secret volume)",
		"flag", flag, "path", path, "mode", fmt.Sprintf("%#o", info.Mode().Perm()))
}

// oldKeys loads the earlier master keys of a rotation in progress.
func (c *storeConfig) oldKeys() ([][]byte, error) {
	var keys [][]byte
	for _, path := range c.oldMasterKeyFiles {
		key, err := secretbox.ReadKeyFile(path)
		if err != nil {
			return nil, fmt.Errorf("--old-master-key-file: %w", err)
		}
		keys = append(keys, key)
	}
	for i, encoded := range strings.Split(os.Getenv(oldMasterKeysEnv), ",") {
		if strings.TrimSpace(encoded) == "" {
			continue
		}
		key, err := secretbox.ParseKey(strings.TrimSpace(encoded))
		if err != nil {
			return nil, fmt.Errorf("$%s, key %d: %w", oldMasterKeysEnv, i+1, err)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, usagef("--log-level: %v", err)
	}
	return slog.New(server.NewLogHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))), nil
}

// serveConfig are the server settings beyond storage.
type serveConfig struct {
	listen                string
	httpListen            string
	maxAttempts           int
	maxPendingPerEndpoint int64
	maxPendingTotal       int64
	maxVerifyBytes        int64
	retention             server.Retention
	cacheTTL              time.Duration
	claimCacheSize        int
	claimCacheTTL         time.Duration
	auth                  authFlags
	// bootstrapToken, when set, is stored as an admin token if none exists yet.
	bootstrapToken string
	pprof          bool
	gcPercent      int
	// commitEachClaim turns group commit off (for measuring what it gains).
	commitEachClaim bool
	// leaseConcurrency bounds the leases a database-url store runs at once.
	leaseConcurrency int
	// generatedKey is the master key file generated at this start (nil when none was): see
	// refuseGeneratedKey.
	generatedKey *generatedKey
}

// generatedKey is a master key file generated at this start; checked is set once the store
// was found to hold no secret in force the key cannot open.
type generatedKey struct {
	path    string
	hold    *secretbox.KeyFileHold
	checked atomic.Bool
}

// close releases the key file keyring holds: only when the process no longer uses its key.
func (c *storeConfig) close() {
	c.keyHold.Close()
	c.keyHold = nil
}

// generated returns the master key file keyring generated, nil when it generated none.
func (c *storeConfig) generated() *generatedKey {
	if c.generatedKey == "" {
		return nil
	}
	return &generatedKey{path: c.generatedKey, hold: c.keyHold}
}

// abandonGeneratedKey moves aside the master key file generated at this start unless a
// check against the store found it the data directory's own (see runServe).
func abandonGeneratedKey(log *slog.Logger, gk *generatedKey) {
	if gk.checked.Load() {
		return
	}
	if aside, err := setAsideGeneratedKey(gk); errors.Is(err, secretbox.ErrKeyFileInUse) {
		log.Warn("the master key generated at this start was not checked against the store, but is left in place: another instance started at the same moment read it and may seal secrets under it", "path", gk.path)
	} else if err != nil {
		log.Error("the master key generated at this start was not checked against the store, and cannot be moved aside: remove it before the next start", "path", gk.path, "err", err)
	} else if aside != "" {
		log.Warn("the master key generated at this start was moved aside: the start ended before checking it against the store", "path", gk.path, "moved_to", aside)
	}
}

// gcPercentToSet returns the collector target serve sets, or 0 to leave Go's own ($GOGC, else
// 100): --gc-percent when given. The server's live heap is a few MiB while every call
// allocates its body several times, so the default collects dozens of times a second under
// load; a higher target collects less often (BENCHMARKS.md), but lets a burst of large
// requests grow the heap further before it is collected, which is why it is not the default.
// GOGC=off stays an environment-only choice.
func gcPercentToSet(fs *flag.FlagSet, value int) (int, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "gc-percent" })
	if !given {
		return 0, nil
	}
	if value < 1 {
		return 0, usagef("--gc-percent must be at least 1")
	}
	return value, nil
}

// checkRanges refuses counts and durations the flags cannot take, naming every one: a negative
// --max-attempts was taken as the default of 10, a negative cache size or TTL as off, and a
// negative limit of pending deliveries as none, all in silence.
func (c *serveConfig) checkRanges(e env) error {
	return cmp.Or(
		inRange(e, "max-attempts", c.maxAttempts, 1, 1000),
		inRange(e, "max-pending-per-endpoint", c.maxPendingPerEndpoint, 0, math.MaxInt64),
		inRange(e, "max-pending-total", c.maxPendingTotal, 0, math.MaxInt64),
		verifyBytesInRange(e, c.maxVerifyBytes),
		inRange(e, "cache-ttl", c.cacheTTL, 0, time.Hour),
		inRange(e, "claim-cache", c.claimCacheSize, 0, 100_000_000),
		inRange(e, "claim-cache-ttl", c.claimCacheTTL, 0, 30*24*time.Hour),
		inRange(e, "lease-concurrency", c.leaseConcurrency, 0, 1000),
	)
}

// verifyBytesInRange refuses a --max-verify-bytes below the largest request the server takes:
// such a request passes only while nothing else is held, so under steady traffic it could be
// refused on every retry, for ever. 0 (no limit) is taken.
func verifyBytesInRange(e env, value int64) error {
	if value == 0 || value >= server.MaxRecvMsgSize {
		return nil
	}
	fmt.Fprintf(e.stderr, "--max-verify-bytes %d: want 0 (no limit) or at least %d, the largest request\n", value, server.MaxRecvMsgSize)
	return errUsage
}

// offWhenZero maps a flag where zero means off (--cache-ttl 0, --claim-cache 0) to a
// server.Options field where zero means the default and a negative value means off.
func offWhenZero[T int | int64 | time.Duration](flagValue T) T {
	if flagValue <= 0 {
		return -1
	}
	return flagValue
}

func (c *serveConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7700", "gRPC listen address; a non-loopback address needs --require-auth or --client-ca")
	fs.StringVar(&c.httpListen, "http-listen", "", "address for /metrics, /healthz and /readyz (e.g. 127.0.0.1:7701); empty: off")
	fs.IntVar(&c.maxAttempts, "max-attempts", server.DefaultMaxAttempts, "leases a delivery gets before it moves to the dead letters")
	fs.Int64Var(&c.maxPendingPerEndpoint, "max-pending-per-endpoint", 0, "unfinished deliveries per endpoint at which new events get RESOURCE_EXHAUSTED (0: no limit)")
	fs.Int64Var(&c.maxPendingTotal, "max-pending-total", 0, "unfinished deliveries in all at which new events get RESOURCE_EXHAUSTED (0: no limit)")
	fs.Int64Var(&c.maxVerifyBytes, "max-verify-bytes", server.DefaultMaxVerifyBytesInFlight, "bytes of Verify requests held at once, waiting for their claims, above which calls get RESOURCE_EXHAUSTED with a 1 s retry hint (the heap holds about twice this; 0: no limit)")
	fs.DurationVar(&c.retention.DedupeWindow, "dedupe-window", 30*24*time.Hour, "how long claims are kept; must outlast every provider's retries (a warning below 72h) and twice every endpoint's timestamp tolerance (a warning per endpoint)")
	fs.DurationVar(&c.retention.AckedRetention, "inbox-retention", 7*24*time.Hour, "how long acked inbox records are kept")
	fs.DurationVar(&c.cacheTTL, "cache-ttl", server.DefaultCacheTTL, "bound on how long an endpoint or secret change made through another instance takes to reach this one (rotation, retirement); changes made here apply at once")
	fs.IntVar(&c.claimCacheSize, "claim-cache", server.DefaultClaimCacheSize, "how many committed claims to remember, answering redeliveries of them without a database read (0: off)")
	fs.DurationVar(&c.claimCacheTTL, "claim-cache-ttl", server.DefaultClaimCacheTTL, "how long a remembered claim is trusted (never beyond half the dedupe window)")
	c.auth.register(fs)
	fs.IntVar(&c.gcPercent, "gc-percent", 0, "Go garbage collector target, as GOGC (default: $GOGC, else Go's 100); 400 measured 10-20 % more accepted/s but lets the heap reach 5 times the live data (BENCHMARKS.md)")
	fs.IntVar(&c.leaseConcurrency, "lease-concurrency", crdb.DefaultLeaseConcurrency, "with --database-url, how many lease transactions run at once; leases that wait in the server meanwhile share the next one, so that the drain does not crowd new deliveries out of the database's CPU (0: no limit, every lease a transaction of its own; BENCHMARKS.md)")
	fs.BoolVar(&c.commitEachClaim, "commit-each-claim", false, "turn group commit off: every claim commits in its own transaction, concurrently (slower; for measuring what group commit gains)")
	fs.BoolVar(&c.pprof, "pprof", false, "also serve Go profiles under /debug/pprof/ on --http-listen (for profiling; off by default)")
}

// MinSafeDedupeWindow is the shortest --dedupe-window serve takes without a warning: Stripe
// retries for up to 3 days, and a retry whose claim the sweeper has deleted is accepted again.
const MinSafeDedupeWindow = 72 * time.Hour

// checkRetention refuses retention periods that are not positive (they used to mean the
// default, silently), and warns of a dedupe window shorter than providers retry for.
func checkRetention(log *slog.Logger, r server.Retention) error {
	switch {
	case r.DedupeWindow <= 0:
		return usagef("--dedupe-window %s: want a positive duration", r.DedupeWindow)
	case r.AckedRetention <= 0:
		return usagef("--inbox-retention %s: want a positive duration", r.AckedRetention)
	case r.DedupeWindow < MinSafeDedupeWindow:
		log.Warn("--dedupe-window is shorter than providers retry for: a retry, or a replay within an endpoint's timestamp tolerance, that arrives after its claim is deleted is ACCEPTED again",
			"dedupe_window", r.DedupeWindow.String(), "stripe_retries_for", MinSafeDedupeWindow.String())
	}
	return nil
}

func runServe(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "serve")
	var cfg storeConfig
	cfg.register(fs)
	var sc serveConfig
	sc.register(fs)
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(e.stderr, *logLevel)
	if err != nil {
		return err
	}
	gc, err := gcPercentToSet(fs, sc.gcPercent)
	if err != nil {
		return err
	}
	if gc != 0 {
		debug.SetGCPercent(gc)
	}
	if err := sc.auth.check(log, sc.listen); err != nil {
		return err
	}
	sc.bootstrapToken = bootstrapTokenFromEnv()
	if sc.bootstrapToken != "" {
		if err := server.CheckBootstrapToken(sc.bootstrapToken); err != nil {
			return fmt.Errorf("$%s: %w", bootstrapTokenEnv, err)
		}
	}
	if sc.bootstrapToken != "" && !sc.auth.enabled() {
		log.Info("$" + bootstrapTokenEnv + " is set: its admin token is stored, and takes effect once authentication is on (--require-auth)")
	}
	if sc.httpListen != "" {
		if err := requireLoopback(sc.httpListen); err != nil {
			return usagef("--http-listen: %v", err)
		}
	}
	if sc.pprof && sc.httpListen == "" {
		return usagef("--pprof needs --http-listen")
	}
	// Before the keyring, which may write a new master key file: a refused command line
	// leaves nothing behind.
	if err := sc.checkRanges(e); err != nil {
		return err
	}
	if err := checkRetention(log, sc.retention); err != nil {
		return err
	}
	cfg.log = log
	keyring, err := cfg.keyring(log)
	if err != nil {
		return err
	}
	// Released last, after a generated key not checked is moved aside (deferred below).
	defer cfg.close()
	if cfg.generatedKey != "" {
		sc.generatedKey = cfg.generated()
		// A generated key is the data directory's only once a start has checked it against the
		// store (refuseGeneratedKey). A start that ends before (its port taken, the store
		// refused, a signal while storage was not ready) must not leave it in place: the next
		// start would read it as the directory's own key, generate nothing, so check nothing,
		// and serve every secret sealed under the lost key UNAVAILABLE without a word.
		defer abandonGeneratedKey(log, sc.generatedKey)
	}
	if sc.commitEachClaim {
		log.Warn("--commit-each-claim: group commit is off, every claim commits alone")
	}
	open := func(ctx context.Context) (storage.Store, error) {
		st, err := cfg.openStore(ctx)
		if err != nil {
			return st, err
		}
		if each, ok := st.(interface{ CommitEachClaim() }); ok && sc.commitEachClaim {
			each.CommitEachClaim()
		}
		if leases, ok := st.(interface{ SetLeaseConcurrency(int) }); ok {
			leases.SetLeaseConcurrency(sc.leaseConcurrency)
		}
		return st, nil
	}
	running, err := startServerWith(ctx, log, sc, keyring, open)
	if err != nil {
		return err
	}
	log.Info("hookverify serving", "addr", running.addr, "http", running.httpAddr)
	select {
	case <-ctx.Done():
	case err := <-running.failed:
		running.stop()
		return fmt.Errorf("opening storage: %w", err)
	}
	// A second SIGTERM or SIGINT cuts the drain short, as an operator pressing Ctrl-C again
	// expects.
	log.Info("shutting down: NOT_SERVING, draining the calls under way", "bound", drainBound.String())
	if err := running.shutdown(secondSignal(ctx)); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

func runMigrate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "migrate")
	var cfg storeConfig
	cfg.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(e.stderr, "info")
	if err != nil {
		return err
	}
	cfg.log = log
	st, err := cfg.openStore(ctx) // Open migrates.
	if err != nil {
		return err
	}
	if err := st.Migrate(ctx); err != nil {
		st.Close()
		return err
	}
	fmt.Fprintln(e.stdout, "migrations applied")
	return st.Close()
}

// requireLoopback refuses non-loopback addresses, for listeners that have no caller
// authentication (the HTTP metrics and health listener).
func requireLoopback(addr string) error {
	loopback, err := isLoopbackAddr(addr)
	if err != nil {
		return err
	}
	if !loopback {
		return fmt.Errorf("%q is not a loopback address; this listener has no caller authentication, so it only listens on 127.0.0.1, ::1 or localhost", addr)
	}
	return nil
}

// isLoopbackAddr reports whether a listen address is 127.0.0.1, ::1 or localhost (an empty
// host, which listens on every interface, is not).
func isLoopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("listen address %q: %w", addr, err)
	}
	if ascii.EqualFold(host, "localhost") {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// runningServer is a started gRPC server and its store.
type runningServer struct {
	addr       string
	httpAddr   string
	log        *slog.Logger
	http       *http.Server
	background sync.WaitGroup
	srv        *server.Server
	grpc       *grpc.Server
	cancel     context.CancelFunc
	done       chan struct{}
	store      chan storage.Store
	// failed receives the error that made opening the store give up: one no retry can mend.
	failed chan error
}

// refusalGrace is how long serve keeps trying a database that refuses its configuration (a
// wrong password, an unknown role or database, ...) before it stops: long enough for a
// deployment to create what it names, or for CockroachDB to read its users again.
var refusalGrace = time.Minute

// startServer listens, then opens the store in the background (retrying while the database is
// unreachable) and reports SERVING once it is open and migrated.
func startServer(ctx context.Context, log *slog.Logger, listen string, keyring *secretbox.Keyring, open func(context.Context) (storage.Store, error)) (*runningServer, error) {
	return startServerWith(ctx, log, serveConfig{listen: listen, cacheTTL: server.DefaultCacheTTL, claimCacheSize: server.DefaultClaimCacheSize, claimCacheTTL: server.DefaultClaimCacheTTL}, keyring, open)
}

// startServerWith is startServer with every serve setting; once storage is ready it also runs
// the inbox monitor (backpressure, gauges) and the retention sweeper.
func startServerWith(ctx context.Context, log *slog.Logger, sc serveConfig, keyring *secretbox.Keyring, open func(context.Context) (storage.Store, error)) (*runningServer, error) {
	authConfig, err := sc.auth.config()
	if err != nil {
		return nil, err
	}
	creds, err := sc.auth.transportCredentials(log)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(server.Options{
		Keyring: keyring, Protocols: protocol.Default(), Logger: log, Metrics: server.NewMetrics(),
		MaxAttempts: sc.maxAttempts, MaxPendingPerEndpoint: sc.maxPendingPerEndpoint, MaxPendingTotal: sc.maxPendingTotal,
		MaxVerifyBytesInFlight: offWhenZero(sc.maxVerifyBytes),
		CacheTTL:               offWhenZero(sc.cacheTTL),
		ClaimCacheSize:         offWhenZero(sc.claimCacheSize),
		ClaimCacheTTL:          offWhenZero(sc.claimCacheTTL),
		DedupeWindow:           sc.retention.DedupeWindow,
		Auth:                   authConfig,
		// Instances sharing a database time leases by its clock, not by each machine's.
		DatabaseClock: true,
	})
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", sc.listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", sc.listen, err)
	}
	var grpcOpts []grpc.ServerOption
	if creds != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(srv.ObserveHandshakes(creds)))
	}
	g := srv.NewGRPCServer(grpcOpts...)
	ctx, cancel := context.WithCancel(ctx)
	r := &runningServer{addr: lis.Addr().String(), log: log, srv: srv, grpc: g, cancel: cancel, done: make(chan struct{}), store: make(chan storage.Store, 1), failed: make(chan error, 1)}
	if sc.httpListen != "" {
		hl, err := net.Listen("tcp", sc.httpListen)
		if err != nil {
			lis.Close()
			cancel()
			return nil, fmt.Errorf("listening on %s: %w", sc.httpListen, err)
		}
		r.httpAddr = hl.Addr().String()
		handler := srv.HTTPHandler()
		if sc.pprof {
			handler = withPprof(handler)
		}
		// Every timeout, not only the headers': with ReadTimeout and IdleTimeout unset, a
		// connection kept alive after a scrape, or one dribbling a request body (read after the
		// handler, to reuse the connection), was held until the client let go. No handler
		// reads a body, and ReadTimeout does not cut a long profile short (it bounds reads,
		// not the handler).
		r.http = &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second}
		go r.http.Serve(hl)
	}
	go func() {
		if err := g.Serve(lis); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			log.Error("grpc server stopped", "err", err)
		}
	}()
	go func() {
		defer close(r.done)
		backoff := 200 * time.Millisecond
		var refusedSince time.Time // when the database began to refuse the configuration
		for {
			st, err := open(ctx)
			if err == nil {
				err = prepareTokens(ctx, log, st, sc)
				if err == nil {
					_, err = srv.DigestStoredCredentialOptions(ctx, st)
				}
				if err == nil {
					_, err = srv.DeadLetterExhausted(ctx, st)
				}
				if err == nil && sc.generatedKey != nil {
					err = refuseGeneratedKey(ctx, srv, st, sc.generatedKey)
				}
				if err != nil {
					st.Close()
					// A privilege missing for these first writes is the configuration problem
					// Open reports for its own, and ends the same way.
					err = crdb.RefusedConfiguration(err)
				}
			}
			if err == nil {
				if sc.generatedKey != nil {
					sc.generatedKey.checked.Store(true)
				}
				srv.SetStore(st)
				r.store <- st
				log.Info("storage ready")
				r.background.Go(func() { warnUnreadableSecrets(ctx, log, srv, st) })
				r.background.Go(func() { warnTolerancesOverWindow(ctx, log, srv, st) })
				r.background.Add(4)
				go func() { defer r.background.Done(); srv.RunClockSync(ctx) }()
				go func() { defer r.background.Done(); srv.RunInboxMonitor(ctx, time.Second) }()
				go func() { defer r.background.Done(); srv.RunRetention(ctx, sc.retention) }()
				go func() { defer r.background.Done(); srv.RunSecretUseWriter(ctx, server.DefaultSecretUseFlush) }()
				return
			}
			if errors.Is(err, storage.ErrInvalid) {
				// A configuration no retry mends (an unparsable --database-url): give up, rather
				// than look for ever like a database that is slow to come up. A database's
				// refusal (crdb.ErrRefused) may yet be mended, by a role or database the same
				// deployment creates a moment later, or a CockroachDB able to read its users
				// again: it is given refusalGrace.
				refused := errors.Is(err, crdb.ErrRefused)
				if refused && refusedSince.IsZero() {
					refusedSince = time.Now()
				}
				if !refused || time.Since(refusedSince) >= refusalGrace {
					log.Error("storage cannot be opened with this configuration", "err", err)
					r.failed <- err
					return
				}
				log.Error("the database refuses this configuration; retrying for a while, in case it is being set up", "err", err, "in", backoff,
					"giving_up_in", (refusalGrace - time.Since(refusedSince)).Round(time.Second).String())
			} else {
				refusedSince = time.Time{}
				log.Warn("storage not ready; retrying", "err", err, "in", backoff)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(backoff*2, 5*time.Second)
		}
	}()
	return r, nil
}

// withPprof serves the runtime profiles under /debug/pprof/ next to h. They reveal code paths
// and timings, not request data, and like the rest of --http-listen they are loopback only.
func withPprof(h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", h)
	return mux
}

// waitReady blocks until the store is open (or the context ends).
func (r *runningServer) waitReady(ctx context.Context) error {
	select {
	case <-r.done:
		if len(r.store) == 0 {
			return errors.New("server stopped before storage was ready")
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// drainBound is how long the calls under way at shutdown get to finish before they are cut
// off (their callers get UNAVAILABLE, and retry another instance).
const drainBound = 10 * time.Second

// stop is shutdown for callers that have no use for its error.
func (r *runningServer) stop() { r.shutdown(context.Background()) }

// shutdown reports NOT_SERVING, drains in-flight calls (cutting off those still running after
// drainBound, or at once when cut ends: the second signal), then ends the background work and
// closes the store. It returns the store's close error: serve exits nonzero on it.
func (r *runningServer) shutdown(cut context.Context) error {
	r.srv.Shutdown()
	stopped := make(chan struct{})
	go func() { r.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(drainBound):
		r.log.Warn("calls still running after the drain bound: cutting them off, their callers get UNAVAILABLE", "bound", drainBound.String())
		r.grpc.Stop()
	case <-cut.Done():
		r.log.Warn("second signal: cutting off the calls still running, their callers get UNAVAILABLE", "signal", secondSignalName(cut))
		r.grpc.Stop()
	}
	// The background work ends only now: the calls drained note the secrets they used, which
	// the secret-use writer's last flush writes, and a store that opens meanwhile is closed
	// below all the same.
	r.cancel()
	if r.http != nil {
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r.http.Shutdown(shutdownCtx)
		cancel()
	}
	<-r.done
	r.background.Wait()
	select {
	case st := <-r.store:
		r.srv.SetStore(nil)
		if err := st.Close(); err != nil {
			r.log.Error("closing storage failed", "err", err)
			return fmt.Errorf("closing storage: %w", err)
		}
	default:
	}
	return nil
}

// refuseGeneratedKey refuses to serve with a master key generated at this start when the
// store holds secrets in force sealed under other keys: the data directory's key file is
// gone (deleted, or the directory restored without it) or the key the operator keeps outside
// it was not given. Served so, every delivery those secrets sign would be answered
// UNAVAILABLE, and the generated key would be read silently at every later start. The
// generated file is moved aside, not deleted (an instance started at the same moment may
// have read it), so that the next start generates nothing and asks again. The error wraps
// storage.ErrInvalid: no retry mends it.
func refuseGeneratedKey(ctx context.Context, srv *server.Server, st storage.Store, gk *generatedKey) error {
	path := gk.path
	n, keys, err := srv.UnreadableSecrets(ctx, st)
	if err != nil || n == 0 {
		return err
	}
	aside, err := setAsideGeneratedKey(gk)
	if errors.Is(err, secretbox.ErrKeyFileInUse) {
		return fmt.Errorf("%w: the store holds %d secrets sealed under master keys %v, but no master key was given and %s was missing, so a new one was generated; another instance started at the same moment uses it, so it is left in place: stop every instance, move %s aside and keep it (that instance may have sealed new secrets under it), then give the key they were sealed with (--master-key-file or $%s, that one with --old-master-key-file)",
			storage.ErrInvalid, n, keys, path, path, masterKeyEnv)
	}
	if err != nil {
		return fmt.Errorf("%w: the store holds %d secrets sealed under master keys %v, not under the key generated at this start, which cannot be moved aside (%v): remove %s, then give the key they were sealed with (--master-key-file or $%s)",
			storage.ErrInvalid, n, keys, err, path, masterKeyEnv)
	}
	return fmt.Errorf("%w: the store holds %d secrets sealed under master keys %v, but no master key was given and %s was missing, so a new one was generated (moved aside to %s): give the key they were sealed with (--master-key-file or $%s), or restore %s from its backup. To run without those secrets (each answered UNAVAILABLE until retired and replaced), give a new key with --master-key-file",
		storage.ErrInvalid, n, keys, path, aside, masterKeyEnv, path)
}

// setAsideGeneratedKey moves the master key file generated at this start to
// <path>.unused-<time> (never over another file), and returns that path ("" when the file is
// gone already: a refusal moved it). Aside, not deleted; and not at all (an error wrapping
// secretbox.ErrKeyFileInUse) when another instance holds it, having read it meanwhile.
func setAsideGeneratedKey(gk *generatedKey) (string, error) {
	if gk.hold == nil {
		return "", nil // moved aside already
	}
	aside, err := gk.hold.SetAside()
	if err == nil {
		gk.hold = nil
	}
	return aside, err
}

// warnTolerancesOverWindow has the server log, at start, each stored endpoint whose timestamp
// tolerance is more than half --dedupe-window: a replay within the tolerance that arrives after
// its claim is swept is ACCEPTED again (server.WarnTolerancesOverDedupeWindow).
func warnTolerancesOverWindow(ctx context.Context, log *slog.Logger, srv *server.Server, st storage.Store) {
	if _, err := srv.WarnTolerancesOverDedupeWindow(ctx, st); err != nil && ctx.Err() == nil {
		log.Warn("could not check the stored endpoints' timestamp tolerances against --dedupe-window", "err", err)
	}
}

// warnUnreadableSecrets logs, once the store is open, how many secrets in force are sealed
// under master keys this instance was not given (see server.UnreadableSecrets).
func warnUnreadableSecrets(ctx context.Context, log *slog.Logger, srv *server.Server, st storage.Store) {
	n, keys, err := srv.UnreadableSecrets(ctx, st)
	switch {
	case err != nil:
		if ctx.Err() == nil {
			log.Warn("could not check which master keys the stored secrets need", "err", err)
		}
	case n > 0:
		log.Warn("secrets in force are sealed under master keys this instance was not given: deliveries signed with them are answered UNAVAILABLE here; "+
			"start it with those keys (--old-master-key-file) or finish the runbook ('hookverify rekey')", "secrets", n, "key_ids", keys)
	}
}
