package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/crdb"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// masterKeyEnv names the environment variable holding the base64 master key.
const masterKeyEnv = "HOOKVERIFY_MASTER_KEY"

// storeConfig selects and locates the database and the master key.
type storeConfig struct {
	dataDir       string
	databaseURL   string
	masterKeyFile string
}

func (c *storeConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.dataDir, "data-dir", "./hookverify-data", "directory of the embedded SQLite store (and its generated master key)")
	fs.StringVar(&c.databaseURL, "database-url", "", "CockroachDB or PostgreSQL URL (postgres://...); replaces the embedded store")
	fs.StringVar(&c.masterKeyFile, "master-key-file", "", "file holding the base64 master key (default: $"+masterKeyEnv+", or a generated key in the data dir for the embedded store)")
}

// openStore opens and migrates the configured store.
func (c *storeConfig) openStore(ctx context.Context) (storage.Store, error) {
	if c.databaseURL != "" {
		return crdb.Open(ctx, c.databaseURL)
	}
	if err := os.MkdirAll(c.dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating data dir: %w", err)
	}
	return sqlite.Open(ctx, filepath.Join(c.dataDir, "hookverify.db"))
}

// keyring loads the master key: the environment variable, else the key file, else (embedded
// store only) a key file generated in the data dir, with a warning that it must be backed up.
func (c *storeConfig) keyring(log *slog.Logger) (*secretbox.Keyring, error) {
	var key []byte
	var err error
	switch {
	case os.Getenv(masterKeyEnv) != "":
		key, err = secretbox.ParseKey(os.Getenv(masterKeyEnv))
		if err != nil {
			err = fmt.Errorf("$%s: %w", masterKeyEnv, err)
		}
	case c.masterKeyFile != "":
		key, err = secretbox.ReadKeyFile(c.masterKeyFile)
	case c.databaseURL == "":
		path := filepath.Join(c.dataDir, "master.key")
		var created bool
		key, created, err = secretbox.LoadOrCreateKeyFile(path)
		if created {
			log.Warn("generated a new master key; back it up: without it the stored secrets cannot be decrypted", "path", path)
		}
	default:
		err = fmt.Errorf("a master key is required with --database-url: set $%s or --master-key-file", masterKeyEnv)
	}
	if err != nil {
		return nil, err
	}
	return secretbox.NewKeyring(key)
}

func newLogger(w io.Writer, level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
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
	retention             server.Retention
	pprof                 bool
}

func (c *serveConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7700", "gRPC listen address; only loopback until caller authentication exists")
	fs.StringVar(&c.httpListen, "http-listen", "", "address for /metrics, /healthz and /readyz (e.g. 127.0.0.1:7701); empty: off")
	fs.IntVar(&c.maxAttempts, "max-attempts", server.DefaultMaxAttempts, "leases a delivery gets before it moves to the dead letters")
	fs.Int64Var(&c.maxPendingPerEndpoint, "max-pending-per-endpoint", 0, "unfinished deliveries per endpoint above which new events get RESOURCE_EXHAUSTED (0: no limit)")
	fs.Int64Var(&c.maxPendingTotal, "max-pending-total", 0, "unfinished deliveries in all above which new events get RESOURCE_EXHAUSTED (0: no limit)")
	fs.DurationVar(&c.retention.DedupeWindow, "dedupe-window", 30*24*time.Hour, "how long claims are kept; must outlast every provider's retries")
	fs.DurationVar(&c.retention.AckedRetention, "inbox-retention", 7*24*time.Hour, "how long acked inbox records are kept")
	fs.BoolVar(&c.pprof, "pprof", false, "also serve Go profiles under /debug/pprof/ on --http-listen (for profiling; off by default)")
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
	if err := requireLoopback(sc.listen); err != nil {
		return err
	}
	if sc.httpListen != "" {
		if err := requireLoopback(sc.httpListen); err != nil {
			return fmt.Errorf("--http-listen: %w", err)
		}
	}
	if sc.pprof && sc.httpListen == "" {
		return errors.New("--pprof needs --http-listen")
	}
	keyring, err := cfg.keyring(log)
	if err != nil {
		return err
	}
	running, err := startServerWith(ctx, log, sc, keyring, cfg.openStore)
	if err != nil {
		return err
	}
	log.Info("hookverify serving", "addr", running.addr, "http", running.httpAddr)
	<-ctx.Done()
	log.Info("shutting down")
	running.stop()
	return nil
}

func runMigrate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "migrate")
	var cfg storeConfig
	cfg.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
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

// requireLoopback refuses non-loopback listen addresses: there is no caller authentication yet,
// so anyone who could reach the port could read secrets' metadata and create endpoints.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--listen %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--listen %q is not a loopback address; hookverify has no caller authentication yet, so it only listens on 127.0.0.1, ::1 or localhost", addr)
	}
	return nil
}

// runningServer is a started gRPC server and its store.
type runningServer struct {
	addr       string
	httpAddr   string
	http       *http.Server
	background sync.WaitGroup
	srv        *server.Server
	grpc       *grpc.Server
	cancel     context.CancelFunc
	done       chan struct{}
	store      chan storage.Store
}

// startServer listens, then opens the store in the background (retrying while the database is
// unreachable) and reports SERVING once it is open and migrated.
func startServer(ctx context.Context, log *slog.Logger, listen string, keyring *secretbox.Keyring, open func(context.Context) (storage.Store, error)) (*runningServer, error) {
	return startServerWith(ctx, log, serveConfig{listen: listen}, keyring, open)
}

// startServerWith is startServer with every serve setting; once storage is ready it also runs
// the inbox monitor (backpressure, gauges) and the retention sweeper.
func startServerWith(ctx context.Context, log *slog.Logger, sc serveConfig, keyring *secretbox.Keyring, open func(context.Context) (storage.Store, error)) (*runningServer, error) {
	srv, err := server.New(server.Options{
		Keyring: keyring, Protocols: protocol.Default(), Logger: log, Metrics: server.NewMetrics(),
		MaxAttempts: sc.maxAttempts, MaxPendingPerEndpoint: sc.maxPendingPerEndpoint, MaxPendingTotal: sc.maxPendingTotal,
	})
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", sc.listen)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", sc.listen, err)
	}
	g := srv.NewGRPCServer()
	ctx, cancel := context.WithCancel(ctx)
	r := &runningServer{addr: lis.Addr().String(), srv: srv, grpc: g, cancel: cancel, done: make(chan struct{}), store: make(chan storage.Store, 1)}
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
		r.http = &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
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
		for {
			st, err := open(ctx)
			if err == nil {
				srv.SetStore(st)
				r.store <- st
				log.Info("storage ready")
				r.background.Add(2)
				go func() { defer r.background.Done(); srv.RunInboxMonitor(ctx, time.Second) }()
				go func() { defer r.background.Done(); srv.RunRetention(ctx, sc.retention) }()
				return
			}
			log.Warn("storage not ready; retrying", "err", err, "in", backoff)
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

// stop drains in-flight calls (forcing them after 10 s), then closes the store.
func (r *runningServer) stop() {
	r.srv.Shutdown()
	r.cancel()
	stopped := make(chan struct{})
	go func() { r.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		r.grpc.Stop()
	}
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
		st.Close()
	default:
	}
}
