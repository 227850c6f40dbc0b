package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/hopbyhop"
	"github.com/hookverify/hookverify/internal/ratelog"
	"github.com/hookverify/hookverify/internal/tlsfiles"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// tokenEnv names the environment variable that may hold the API token for the verifier.
const tokenEnv = "HOOKVERIFY_TOKEN"

// edgeConfig is every setting of `hookverify edge`.
type edgeConfig struct {
	listen, metricsListen     string
	verifier                  string
	route                     string
	tlsCert, tlsKey           string
	verifierCA                string
	verifierCert, verifierKey string
	tokenFile                 string
	publicURLBase             string
	trustForwardedProto       bool
	maxBodyBytes              int64
	maxBytesInFlight          int64
	maxConnections            int
	verifyTimeout             time.Duration
	readHeaderTimeout         time.Duration
	readTimeout, writeTimeout time.Duration
	retryAfter                time.Duration
	logLevel                  string
}

func (c *edgeConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.listen, "listen", ":8080", "HTTP(S) address providers deliver to")
	fs.StringVar(&c.metricsListen, "metrics-listen", "", "separate address for /metrics (default: /metrics on --listen)")
	fs.StringVar(&c.verifier, "verifier", "127.0.0.1:7700", "address of the hookverify server: host:port, dns:///name:port (every address of the name), or a list ipv4:a:port,b:port")
	fs.StringVar(&c.route, "route", "/hooks/{endpoint}", "http.ServeMux pattern of webhook URLs; {endpoint} is the endpoint id")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM certificate chain to serve HTTPS (with --tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM private key for --tls-cert")
	fs.StringVar(&c.verifierCA, "verifier-ca", "", "PEM CAs of the verifier's certificate; enables TLS to the verifier")
	fs.StringVar(&c.verifierCert, "verifier-cert", "", "PEM client certificate for mutual TLS to the verifier")
	fs.StringVar(&c.verifierKey, "verifier-key", "", "PEM key of --verifier-cert")
	fs.StringVar(&c.tokenFile, "token-file", "", "file holding the verifier API token (default: $"+tokenEnv+")")
	fs.StringVar(&c.publicURLBase, "public-url-base", "", "scheme://host providers call, for URL-signing providers behind a proxy; forwarded URL = base + request URI")
	fs.BoolVar(&c.trustForwardedProto, "trust-forwarded-proto", false, "take the URL scheme from X-Forwarded-Proto (only behind a proxy that sets it)")
	fs.Int64Var(&c.maxBodyBytes, "max-body-bytes", client.DefaultMaxBodyBytes, "largest body forwarded, at most the server's ceiling (the default); larger ones are answered 413")
	fs.Int64Var(&c.maxBytesInFlight, "max-bytes-in-flight", client.DefaultMaxBytesInFlight, "bytes of requests (headers, URL and body) held at once, from their reading to their answer, above which a request is answered 503 with Retry-After without reading (further) (the heap holds a little over twice this; 0: no limit)")
	fs.IntVar(&c.maxConnections, "max-connections", DefaultEdgeMaxConnections, "connections open at once on --listen, idle keep-alive ones included; at the limit a new one takes the slot of the keep-alive connection idle the longest (for at least 1s), closing it, or else waits to be accepted (each holds up to 272 KiB of headers before --max-bytes-in-flight counts it; 0: no limit)")
	fs.DurationVar(&c.verifyTimeout, "verifier-timeout", client.DefaultVerifyTimeout, "deadline of each request's work, retries included; keep it under the providers' timeout (GitHub: 10s)")
	fs.DurationVar(&c.readHeaderTimeout, "read-header-timeout", 5*time.Second, "time allowed to read request headers")
	fs.DurationVar(&c.readTimeout, "read-timeout", 10*time.Second, "time allowed to read a whole request")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 10*time.Second, "time allowed from the end of the headers to the end of the answer; at least 1s above --verifier-timeout (0: none)")
	fs.DurationVar(&c.retryAfter, "retry-after", client.DefaultRetryAfter, "Retry-After sent with 503 answers")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
}

func runEdge(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "edge")
	var cfg edgeConfig
	cfg.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	log, err := newLogger(e.stderr, cfg.logLevel)
	if err != nil {
		return err
	}
	return serveEdge(ctx, log, cfg)
}

// answerMargin is the time --write-timeout leaves, after --verifier-timeout, to write the answer.
const answerMargin = time.Second

// serveEdge runs the edge until ctx ends, then drains in-flight requests.
func serveEdge(ctx context.Context, log *slog.Logger, cfg edgeConfig) error {
	if !strings.Contains(cfg.route, "{endpoint}") {
		return usagef("--route %q has no {endpoint} wildcard", cfg.route)
	}
	if strings.HasSuffix(cfg.route, "/") || strings.Contains(cfg.route, "...}") {
		// A subtree pattern: ServeMux would answer "/in/ep" with a redirect to "/in/ep/", a URL
		// the provider did not call, and take "/in/ep/x/y" as endpoint ep.
		return usagef("--route %q matches a subtree (it ends in / or a {name...} wildcard): give one URL per endpoint, as /hooks/{endpoint} (or /hooks/{endpoint}/{$} for URLs ending in /)", cfg.route)
	}
	if err := checkAddress("--verifier", cfg.verifier, "--verifier-ca"); err != nil {
		return err
	}
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if (cfg.verifierCert == "") != (cfg.verifierKey == "") {
		return usagef("--verifier-cert and --verifier-key go together")
	}
	if cfg.maxBodyBytes <= 0 || cfg.maxBodyBytes > client.MaxBodyCeiling {
		// Above the server's ceiling, a body could never be accepted, and the largest would
		// fail as if the server were overloaded, so providers would retry them for days.
		return usagef("--max-body-bytes must be between 1 and the server's ceiling of %d", client.MaxBodyCeiling)
	}
	if cfg.maxBytesInFlight < 0 {
		return usagef("--max-bytes-in-flight %d: want 0 (no limit) or more", cfg.maxBytesInFlight)
	}
	if cfg.maxConnections < 0 {
		return usagef("--max-connections %d: want 0 (no limit) or more", cfg.maxConnections)
	}
	if cfg.verifyTimeout <= 0 {
		// Without it nothing bounds a request's work, and the drain at shutdown (which waits
		// the verifier timeout and a little more) would cut in-flight deliveries.
		return usagef("--verifier-timeout must be positive")
	}
	for _, d := range []struct {
		flag  string
		value time.Duration
	}{{"--read-header-timeout", cfg.readHeaderTimeout}, {"--read-timeout", cfg.readTimeout}, {"--write-timeout", cfg.writeTimeout}, {"--retry-after", cfg.retryAfter}} {
		if d.value < 0 {
			// net/http takes a negative timeout as none, and the handler a negative
			// Retry-After as its floor: either would start the edge without what the flag
			// was given for (the slow-upload bound, say), in silence.
			return usagef("%s %v: want 0 or more", d.flag, d.value)
		}
	}
	if cfg.writeTimeout > 0 && cfg.writeTimeout < cfg.verifyTimeout+answerMargin {
		// net/http drops an answer written after the write deadline (and over HTTP/2 cancels
		// the call): a Verify that ends after it, even one that stored the event, reaches the
		// provider as a closed connection while the access log says 200, and a redelivery as
		// slow is lost the same way.
		return usagef("--write-timeout %v must be at least %v longer than --verifier-timeout %v, to leave time to write the answer",
			cfg.writeTimeout, answerMargin, cfg.verifyTimeout)
	}
	conn, err := dialVerifier(cfg, log)
	if err != nil {
		return err
	}
	defer conn.Close()

	metrics := newEdgeMetrics()
	hooks := client.Handler(conn,
		client.EndpointFromPathValue("endpoint"),
		client.WithVerifyTimeout(cfg.verifyTimeout),
		client.WithRetryAfter(cfg.retryAfter),
		client.WithMaxBytesInFlight(cfg.maxBytesInFlight),
		client.WithLogger(log),
		client.WithObserver(func(r *http.Request, o client.Outcome) {
			metrics.observe(o)
			if slot, ok := r.Context().Value(outcomeKey{}).(*client.Outcome); ok {
				*slot = o
			}
		}))
	mux := http.NewServeMux()
	if err := handle(mux, cfg.route, hooks); err != nil {
		// A pattern http.ServeMux cannot take is a value of the wrong form: a usage error,
		// found before listening, as the README's exit statuses promise.
		return usagef("--route: %v", err)
	}
	if err := handle(mux, "GET /healthz", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })); err != nil {
		return err
	}
	servers := []*http.Server{newEdgeServer(cfg, accessLog(log, refuseUncleanPaths(mux, cfg.route)), log)}
	if cfg.metricsListen == "" {
		if err := handle(mux, "GET /metrics", metrics); err != nil {
			return err
		}
	} else {
		metricsMux := http.NewServeMux()
		metricsMux.Handle("GET /metrics", metrics)
		servers = append(servers, newEdgeServer(cfg, refuseUncleanPaths(metricsMux, ""), log))
	}
	if cfg.tlsCert != "" {
		// Read again when the files change: providers' webhooks reach the edge over the
		// public certificate, renewed every few weeks by certbot or cert-manager.
		r, err := tlsfiles.NewReloader([]string{cfg.tlsCert, cfg.tlsKey}, func(contents [][]byte) (*tls.Config, error) {
			cert, err := tls.X509KeyPair(contents[0], contents[1])
			if err != nil {
				return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
			}
			return &tls.Config{Certificates: []tls.Certificate{cert}}, nil
		}, func(err error) {
			log.Error("the TLS files changed but do not load; still serving the previous ones", "err", err)
		}, func(cfg *tls.Config) {
			log.Info("reloaded the TLS files", certificateAttrs(cfg)...)
		})
		if err != nil {
			return err
		}
		servers[0].TLSConfig = &tls.Config{GetCertificate: r.GetCertificate, MinVersion: tls.VersionTLS12}
	}

	addrs := []string{cfg.listen, cfg.metricsListen}
	listeners := make([]net.Listener, 0, len(servers))
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := range servers {
		l, err := net.Listen("tcp", addrs[i])
		if err != nil {
			return fmt.Errorf("listening on %s: %w", addrs[i], err)
		}
		listeners = append(listeners, l)
	}
	// Wrapped without a limit too (--max-connections 0), so that the open connections are counted.
	full := ratelog.ForLog(log, edgeConnectionsLogInterval, "connections kept waiting at --max-connections")
	limit := limitConnections(listeners[0], cfg.maxConnections, metrics.connections, func() {
		if ok, skipped := full.Allow(); ok {
			log.Warn("holding --max-connections connections open, none idle for "+edgeIdleGrace.String()+"; new ones wait to be accepted",
				"max_connections", cfg.maxConnections, "not_logged_since_last", skipped)
		}
	})
	listeners[0] = limit
	servers[0].ConnState = limit.trackState
	errs := make(chan error, len(servers))
	for i, srv := range servers {
		go func() {
			var err error
			if srv.TLSConfig != nil {
				err = srv.ServeTLS(listeners[i], "", "")
			} else {
				err = srv.Serve(listeners[i])
			}
			errs <- err
		}()
	}
	attrs := []any{"addr", listeners[0].Addr().String(), "tls", cfg.tlsCert != "", "route", cfg.route, "verifier", cfg.verifier}
	if len(listeners) > 1 {
		attrs = append(attrs, "metrics_addr", listeners[1].Addr().String())
	}
	log.Info("edge listening", attrs...)

	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errs:
	}
	log.Info("edge shutting down")
	// In-flight requests end within the verifier timeout; give them that and a little more.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.verifyTimeout+2*time.Second)
	defer cancel()
	for _, srv := range servers {
		if err := srv.Shutdown(shutdownCtx); err != nil {
			log.Warn("forcing the remaining connections closed", "err", err)
			srv.Close()
		}
	}
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return serveErr
	}
	log.Info("edge stopped")
	return nil
}

func dialVerifier(cfg edgeConfig, log *slog.Logger) (*client.Conn, error) {
	opts := []client.Option{client.WithMaxBodyBytes(cfg.maxBodyBytes), client.WithConnLogger(log)}
	if cfg.publicURLBase != "" {
		if err := client.CheckPublicURLBase(cfg.publicURLBase); err != nil {
			// The value is not quoted: it might hold credentials.
			return nil, usagef("--public-url-base: %v", err)
		}
		opts = append(opts, client.WithPublicURLBase(cfg.publicURLBase))
	}
	if cfg.trustForwardedProto {
		opts = append(opts, client.WithTrustForwardedProto())
	}
	useTLS := cfg.verifierCA != "" || cfg.verifierCert != "" || cfg.verifierKey != ""
	if useTLS {
		opts = append(opts, client.WithTLSFiles(cfg.verifierCA, cfg.verifierCert, cfg.verifierKey))
	}
	token, err := readToken(cfg.tokenFile)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return client.Dial(cfg.verifier, opts...)
	}
	source := "$" + tokenEnv
	if cfg.tokenFile != "" {
		source = "--token-file " + cfg.tokenFile
	}
	if strings.ContainsFunc(token, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		// Said with the token's source, as the other commands say it (never quoting it).
		return nil, fmt.Errorf("the API token in %s holds a space or a character that is not printable ASCII; a token is what 'token create' printed (hvt_...)", source)
	}
	conn, err := client.Dial(cfg.verifier, append(opts, client.WithToken(token))...)
	if errors.Is(err, client.ErrTokenInClear) {
		// The client package says it in terms of its Go API (WithTLS), which an operator of
		// this command cannot give; said here in flags, as the other commands say it.
		return nil, fmt.Errorf("refusing to send the API token of %s in clear to %s, which is not loopback: give --verifier-ca (the CA of the server's --tls-cert) to speak TLS", source, cfg.verifier)
	}
	return conn, err
}

// handle registers h, turning ServeMux's panic on a bad or conflicting pattern into an error.
func handle(mux *http.ServeMux, pattern string, h http.Handler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("route %q: %v", pattern, r)
		}
	}()
	mux.Handle(pattern, h)
	return nil
}

// newEdgeServer sets timeouts that fit providers' deadlines: a provider that takes longer than
// these to send a request is not one that waits for the answer either.
func newEdgeServer(cfg edgeConfig, h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.readHeaderTimeout,
		ReadTimeout:       cfg.readTimeout,
		WriteTimeout:      cfg.writeTimeout,
		IdleTimeout:       60 * time.Second,
		// The server refuses more than 256 KiB of headers; a little framing on top.
		MaxHeaderBytes: 256<<10 + 16<<10,
		// "OPTIONS *" goes to the handler, which answers it 404 as the Node edge does (and
		// logs it), rather than net/http's own 200 outside the access log.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     stdlog.New(&edgeErrorLog{log: log, limit: ratelog.ForLog(log, edgeHandshakeLogInterval, "TLS handshakes failed")}, "", 0),
	}
}

// refuseUncleanPaths answers 404, as to a path no route takes, a request whose path is not
// clean ("/hooks//ep", "/hooks/./ep", "/hooks/a/../ep", none at all, "*"): http.ServeMux
// would answer 307 to the cleaned path, which most providers do not follow, and one that does
// posts again to a URL it did not call (a URL-signing provider's signature then fails; the
// others' deliveries would be verified under a URL nobody called). The Node edge answers 404.
//
// Likewise a path mux would redirect to itself with a slash added ("/in/ep" to "/in/ep/" under a
// --route "/in/{endpoint}/{$}"): mux.Handler then names a pattern ending in "/{$}" (or, before
// Go 1.26, the target path) for a path that does not end in "/", which no such pattern matches.
//
// A request mux sends anywhere but route (the webhook handler, which reads the body or closes
// the connection itself) is answered without its body being read: its 404 (a path no route
// takes), 405 (/healthz with another method), /healthz and /metrics close the HTTP/1
// connection of a request with a body. Otherwise net/http would read up to 256 KiB of the body
// before sending the answer, and a body that stalled held it until --read-timeout, when it was
// most often lost.
func refuseUncleanPaths(mux *http.ServeMux, route string) http.Handler {
	slashRoute := strings.HasSuffix(route, "/{$}")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The path ServeMux cleans and matches: the escaped one ("%2E%2E" is no dot segment).
		p := r.URL.EscapedPath()
		if !isCleanPath(p) {
			hopbyhop.CloseUnread(w, r)
			http.NotFound(w, r)
			return
		}
		_, pattern := mux.Handler(r)
		if slashRoute && !strings.HasSuffix(p, "/") && (strings.HasSuffix(pattern, "/") || strings.HasSuffix(pattern, "/{$}")) {
			hopbyhop.CloseUnread(w, r)
			http.NotFound(w, r)
			return
		}
		if route == "" || pattern != route {
			hopbyhop.CloseUnread(w, r)
		}
		mux.ServeHTTP(w, r)
	})
}

// isCleanPath reports whether http.ServeMux would take p as it is, without redirecting to
// a cleaned path: absolute, without empty, "." or ".." segments (a trailing slash is kept).
func isCleanPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean == p
}

// edgeHandshakeLogInterval bounds how often the edge logs failed TLS handshakes.
const edgeHandshakeLogInterval = 10 * time.Second

// edgeConnectionsLogInterval bounds how often the edge logs that --max-connections was reached.
const edgeConnectionsLogInterval = 10 * time.Second

// edgeErrorLog takes net/http's error lines to log at WARN, except failed TLS handshakes: one
// closed or reset before its hello (a load balancer's TCP health check, every few seconds) is
// not logged, and the others (a scanner, a client speaking plaintext) at most once per
// edgeHandshakeLogInterval, with how many were not logged since, as the server does.
type edgeErrorLog struct {
	log   *slog.Logger
	limit *ratelog.Limiter
}

func (w *edgeErrorLog) Write(p []byte) (int, error) {
	line := strings.TrimSpace(string(p))
	rest, handshake := strings.CutPrefix(line, "http: TLS handshake error from ")
	if !handshake {
		w.log.Warn(line)
		return len(p), nil
	}
	if strings.HasSuffix(rest, ": EOF") || strings.HasSuffix(rest, "connection reset by peer") {
		return len(p), nil
	}
	if ok, heldBack := w.limit.Allow(); ok {
		remote, reason, _ := strings.Cut(rest, ": ")
		w.log.Warn("TLS handshake failed", "remote", remote, "err", reason, "not_logged_since_last", heldBack)
	}
	return len(p), nil
}

// outcomeKey carries a *client.Outcome slot from the access log into the handler's observer.
type outcomeKey struct{}

// accessLog writes one line per request: method, path (never the query, which may hold a
// provider's token), endpoint, status, verdict and duration. Never bodies or headers.
func accessLog(log *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var o client.Outcome
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), outcomeKey{}, &o)))
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", time.Since(start)}
		if o.Status != 0 {
			attrs = append(attrs, "endpoint", o.EndpointID, "verdict", o.Verdict().String())
			if reason := o.Response.GetRejectReason(); reason != hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED {
				attrs = append(attrs, "reason", reason.String())
			}
			if o.CalledVerifier {
				attrs = append(attrs, "code", o.Code.String(), "verifier_duration", o.VerifierDuration)
			}
		}
		level := slog.LevelInfo
		if r.URL.Path == "/metrics" || r.URL.Path == "/healthz" {
			level = slog.LevelDebug
		}
		log.Log(r.Context(), level, "request", attrs...)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wroteHeader {
		s.status, s.wroteHeader = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// edgeMetrics are the edge's Prometheus metrics.
type edgeMetrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration prometheus.Histogram
	// bytesFull counts requests refused at --max-bytes-in-flight.
	bytesFull prometheus.Counter
	// connections are --listen's connections and their waits at --max-connections.
	connections *connectionMetrics

	mu    sync.Mutex
	known map[string]bool // endpoints the verifier has answered for
}

// maxEndpointLabels bounds the endpoint label's values, which come from URLs anyone can send.
const maxEndpointLabels = 10000

func newEdgeMetrics() *edgeMetrics {
	m := &edgeMetrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_edge_requests_total",
			Help: "Webhook requests answered by the edge, by endpoint and HTTP status."}, []string{"endpoint", "status"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookverify_edge_verifier_errors_total",
			Help: "Verify calls that failed, by gRPC code."}, []string{"code"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookverify_edge_verifier_duration_seconds",
			Help: "Time spent in Verify calls, retries included.", Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}}),
		bytesFull: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_edge_bytes_in_flight_refusals_total",
			Help: "Requests answered 503 with Retry-After, their bodies not read (further), because the edge held --max-bytes-in-flight of requests at once."}),
		connections: newConnectionMetrics(),
		known:       map[string]bool{},
	}
	m.registry.MustRegister(m.requests, m.errors, m.duration, m.bytesFull)
	m.registry.MustRegister(m.connections.collectors()...)
	return m
}

func (m *edgeMetrics) observe(o client.Outcome) {
	// Only endpoints the verifier confirmed get their own label, so random paths cannot grow
	// the metrics without bound. A body too large may be refused before the endpoint is looked
	// up, so that answer confirms nothing.
	m.mu.Lock()
	if o.Response != nil && confirmsEndpoint(o.Response.GetRejectReason()) && len(m.known) < maxEndpointLabels {
		m.known[o.EndpointID] = true
	}
	endpoint := o.EndpointID
	if !m.known[endpoint] {
		endpoint = "_unknown"
	}
	m.mu.Unlock()
	m.requests.WithLabelValues(endpoint, strconv.Itoa(o.Status)).Inc()
	if errors.Is(o.Err, client.ErrBytesInFlight) {
		m.bytesFull.Inc()
	}
	if !o.CalledVerifier {
		return
	}
	if o.Code != codes.OK {
		m.errors.WithLabelValues(o.Code.String()).Inc()
	}
	m.duration.Observe(o.VerifierDuration.Seconds())
}

// confirmsEndpoint reports whether a verdict with this reject reason shows that the endpoint
// exists.
func confirmsEndpoint(r hookverifyv1.RejectReason) bool {
	return r != hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT && r != hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE
}

func (m *edgeMetrics) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
}
