package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/budget"
	"github.com/hookverify/hookverify/internal/ratelog"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
)

// Limits that hold whatever an endpoint says.
const (
	// MaxBodyCeiling is the largest max_body_bytes an endpoint may set (GitHub sends up to 25 MB).
	MaxBodyCeiling = 32 << 20
	// DefaultMaxBodyBytes applies when an endpoint sets none.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultTolerance applies to timestamp-signing protocols when neither the endpoint nor the
	// protocol says otherwise.
	DefaultTolerance = 300 * time.Second
	// MaxTolerance bounds an endpoint's timestamp tolerance.
	MaxTolerance = 7 * 24 * time.Hour
	// MaxHeaderCount and MaxHeaderBytes bound the forwarded headers (names plus values).
	MaxHeaderCount = 500
	MaxHeaderBytes = 256 << 10
	// MaxURLBytes bounds the forwarded URL.
	MaxURLBytes = 16 << 10
	// MaxMethodBytes bounds the forwarded HTTP method.
	MaxMethodBytes = 32
	// MaxRecvMsgSize is the gRPC receive limit: the largest body plus room for headers and URL.
	MaxRecvMsgSize = MaxBodyCeiling + MaxHeaderBytes + MaxURLBytes + 64<<10
)

// Options configure a Server.
type Options struct {
	// Keyring seals and opens secret material. Required.
	Keyring *secretbox.Keyring
	// Protocols is the provider registry. Required.
	Protocols *protocol.Registry
	// Logger receives structured logs; never bodies or secrets. Defaults to slog.Default().
	Logger *slog.Logger
	// Now is the clock; tests inject one. Defaults to time.Now.
	Now func() time.Time
	// DatabaseClock keeps the server's clock on the database's, for a store that reads it
	// (PostgreSQL, CockroachDB): instances sharing a database compare the times they write, a
	// lease's end above all, and must read one clock (see dbclock.go). Now then only measures
	// the time passed since the last reading. serve sets it.
	DatabaseClock bool
	// MaxAttempts is how many leases a delivery gets before it moves to the dead letters.
	// Defaults to DefaultMaxAttempts.
	MaxAttempts int
	// MaxPendingPerEndpoint and MaxPendingTotal bound unfinished (pending plus leased) inbox
	// deliveries; above them new events are refused with RESOURCE_EXHAUSTED. Zero: no limit.
	// They take effect while RunInboxMonitor runs.
	MaxPendingPerEndpoint int64
	MaxPendingTotal       int64
	// MaxVerifyBytesInFlight bounds the Verify requests (bodies, headers, URLs) the server
	// holds at once, between their arrival and their answer; past it a call is answered
	// RESOURCE_EXHAUSTED with a retry hint. Default DefaultMaxVerifyBytesInFlight; negative:
	// no bound.
	MaxVerifyBytesInFlight int64
	// Metrics, when set, are updated by every call (see NewMetrics).
	Metrics *Metrics
	// CacheTTL bounds how long endpoint and secret changes made through other instances take
	// to reach this one (default DefaultCacheTTL; negative disables the cache).
	CacheTTL time.Duration
	// ClaimCacheSize is how many committed claims this instance remembers to answer
	// redeliveries of them without a database read (default DefaultClaimCacheSize; negative
	// turns the cache off). ClaimCacheTTL is how long each is trusted (default
	// DefaultClaimCacheTTL; negative turns it off). DedupeWindow must be the retention's
	// (default DefaultDedupeWindow): no entry is trusted once its claim is half that old.
	ClaimCacheSize int
	ClaimCacheTTL  time.Duration
	DedupeWindow   time.Duration
	// Auth turns caller authentication and authorization on, in the grpc.Server NewGRPCServer
	// makes (not in one given to Register); nil leaves every call open as LocalPrincipal, the
	// loopback-only development mode.
	Auth *AuthConfig
}

// Server holds the gRPC services. It answers UNAVAILABLE, and health reports NOT_SERVING, until
// SetStore hands it an open, migrated store.
type Server struct {
	hookverifyv1.UnimplementedVerifierServiceServer
	hookverifyv1.UnimplementedAdminServiceServer
	hookverifyv1.UnimplementedInboxServiceServer
	hookverifyv1.UnimplementedTokenServiceServer

	keyring     *secretbox.Keyring
	protocols   *protocol.Registry
	log         *slog.Logger
	now         func() time.Time
	maxAttempts int
	metrics     *Metrics
	store       atomic.Pointer[storeHolder]
	cache       *endpointCache
	// endpointRows caches endpoints without their secrets, for the calls that need only an
	// endpoint's settings (see endpointRow); same TTL as cache.
	endpointRows *refreshCache[string, endpointRowEntry]
	claims       *claimCache
	// dedupeWindow is Options.DedupeWindow with its default: how long claims are kept, against
	// which endpoints' tolerances are checked (warnToleranceOverWindow).
	dedupeWindow time.Duration
	uses         *secretUses
	auth         *authenticator
	// unopenedKeyLog bounds the ERROR logged while a secret in force is sealed under a master
	// key this instance lacks: every delivery to its endpoint, forged ones too, meets it.
	unopenedKeyLog *ratelog.Limiter
	// noSecretLog bounds the ERROR logged while deliveries reach an endpoint with no secret
	// valid now: every delivery to it, forged ones too, meets it.
	noSecretLog *ratelog.Limiter
	// inboxStatsLog limits the monitor's "inbox stats unavailable" lines: it reads every
	// second, and an outage logged a line a second for as long as it lasted.
	inboxStatsLog *ratelog.Limiter
	// scheduledKeyLog bounds the ERROR logged while a provider signs with a secret scheduled
	// to start later: every delivery it sends meets it until then.
	scheduledKeyLog *ratelog.Limiter
	// storageLogs limits the lines of storage failures (storageStatus).
	storageLogs storageLogs
	// refusalLog bounds the lines of calls refused as unauthenticated (refuse).
	refusalLog refusalLog

	maxPendingPerEndpoint int64
	maxPendingTotal       int64
	// verifyBytes bounds the Verify requests held at once (Options.MaxVerifyBytesInFlight; nil:
	// no bound).
	verifyBytes *budget.Bytes
	// inboxSnap is the inbox monitor's last successful read (nil before it).
	inboxSnap atomic.Pointer[inboxSnapshot]
	health    *health.Server
	// healthMu orders the changes of health for service "" and guards the fields below.
	healthMu sync.Mutex
	// storageDown is set while the inbox monitor cannot read the current store. Written under
	// healthMu; an atomic, so that every remembered redelivery can read it without the lock.
	storageDown atomic.Bool
	// shutDown is set by Shutdown: health stays NOT_SERVING for good.
	shutDown bool
	// stopping is closed by Shutdown: health watches end, /readyz answers 503.
	stopping chan struct{}

	// databaseClock is Options.DatabaseClock; anchor the last reading of the database's clock
	// (nil: none yet, and the server's clock is now's). See dbclock.go.
	databaseClock bool
	anchor        atomic.Pointer[clockAnchor]
}

type storeHolder struct{ storage.Store }

// New builds a Server with no store yet.
func New(opts Options) (*Server, error) {
	if opts.Keyring == nil || opts.Protocols == nil {
		return nil, errors.New("server: Keyring and Protocols are required")
	}
	if opts.Auth != nil {
		if err := checkCertScopes(opts.Auth.CertScopes); err != nil {
			return nil, err
		}
	}
	s := &Server{
		keyring:   opts.Keyring,
		protocols: opts.Protocols,
		log:       opts.Logger,
		now:       opts.Now,
		health:    health.NewServer(),
		stopping:  make(chan struct{}),
		uses:      newSecretUses(),

		databaseClock: opts.DatabaseClock,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.unopenedKeyLog = ratelog.ForLog(s.log, unopenedKeyLogInterval, "deliveries met a secret sealed under a master key this server does not hold")
	s.noSecretLog = ratelog.ForLog(s.log, unopenedKeyLogInterval, "deliveries reached an endpoint with no secret valid now")
	s.inboxStatsLog = ratelog.ForLog(s.log, storageLogInterval, "inbox stats unavailable")
	s.scheduledKeyLog = ratelog.ForLog(s.log, unopenedKeyLogInterval, "deliveries were signed with a secret scheduled to start later")
	s.refusalLog.log = s.log
	s.storageLogs.log = s.log
	if s.now == nil {
		s.now = time.Now
	}
	s.metrics = opts.Metrics
	s.auth = newAuthenticator(opts.Auth)
	cacheTTL := opts.CacheTTL
	switch {
	case cacheTTL == 0:
		cacheTTL = DefaultCacheTTL
	case cacheTTL < 0:
		cacheTTL = 0
	}
	s.cache = newEndpointCache(cacheTTL)
	s.endpointRows = newRefreshCache[string, endpointRowEntry](cacheTTL, maxCachedEndpoints)
	// cmp.Or: an unset (zero) option takes the default.
	s.dedupeWindow = opts.DedupeWindow
	if s.dedupeWindow <= 0 {
		s.dedupeWindow = DefaultDedupeWindow
	}
	s.claims = newClaimCache(cmp.Or(opts.ClaimCacheSize, DefaultClaimCacheSize), cmp.Or(opts.ClaimCacheTTL, DefaultClaimCacheTTL), s.dedupeWindow)
	s.maxPendingPerEndpoint, s.maxPendingTotal = opts.MaxPendingPerEndpoint, opts.MaxPendingTotal
	s.verifyBytes = newByteBudget(opts.MaxVerifyBytesInFlight)
	s.maxAttempts = opts.MaxAttempts
	if s.maxAttempts <= 0 {
		s.maxAttempts = DefaultMaxAttempts
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	return s, nil
}

// SetStore hands the server an open, migrated store and reports SERVING; with metrics, the
// store's claim batches are recorded too. Passing nil reports NOT_SERVING again (used while
// shutting down). While a store is set, the inbox monitor reports NOT_SERVING when it cannot
// read it, and SERVING again once it can (see RefreshInboxDepth). With Options.DatabaseClock
// it first reads the database's clock (for at most clockSyncTimeout).
func (s *Server) SetStore(st storage.Store) {
	if st != nil {
		// Before the first call is served: leases and claims are timed by this clock.
		if err := s.syncClock(context.Background(), st); err != nil {
			s.log.Warn("cannot read the database's clock; timing by this machine's until a reading succeeds", "err", err)
		}
	}
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	s.storageDown.Store(false)
	if st == nil {
		s.store.Store(nil)
		s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
		return
	}
	if batches, ok := st.(storage.ClaimBatchReporter); ok && s.metrics != nil {
		batches.ObserveClaimBatches(s.metrics.observeClaimBatch)
	}
	s.store.Store(&storeHolder{st})
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
}

// Shutdown marks the server NOT_SERVING for good: neither SetStore nor the inbox monitor
// changes that afterwards. Health watches are sent NOT_SERVING and end (GracefulStop waits
// for every stream), and /readyz answers 503.
func (s *Server) Shutdown() {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if s.shutDown {
		return
	}
	s.shutDown = true
	s.health.Shutdown()
	close(s.stopping)
}

// setStorageAnswering reports in gRPC health whether the store h answered the inbox monitor:
// NOT_SERVING while it does not, as /readyz answers 503, so that health-checking balancers
// stop sending deliveries the server can only answer UNAVAILABLE; SERVING again once it does.
// It leaves health alone once h is no longer the server's store (SetStore has set health
// since) and after Shutdown.
func (s *Server) setStorageAnswering(h *storeHolder, answering bool) {
	s.healthMu.Lock()
	defer s.healthMu.Unlock()
	if s.shutDown || s.store.Load() != h || s.storageDown.Load() == !answering {
		return
	}
	s.storageDown.Store(!answering)
	if answering {
		s.log.Info("storage answers the inbox monitor again: health SERVING")
		s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
		return
	}
	s.log.Warn("storage does not answer the inbox monitor: health NOT_SERVING until it does")
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
}

// storage returns the store or an UNAVAILABLE status while there is none.
func (s *Server) storage() (storage.Store, error) {
	h := s.store.Load()
	if h == nil {
		return nil, status.Error(codes.Unavailable, "storage not ready yet, retry later")
	}
	return h.Store, nil
}

// clock returns the current time at the microsecond precision both backends store, in UTC:
// the database's with Options.DatabaseClock once read (dbclock.go), else now's.
func (s *Server) clock() time.Time {
	now := s.now()
	if a := s.anchor.Load(); a != nil {
		now = a.now(now)
	}
	return now.UTC().Truncate(time.Microsecond)
}

// Register adds every service (verifier, admin, inbox, token, health, reflection) to g. It
// installs no authentication: a grpc.Server not made by NewGRPCServer runs every call as
// LocalPrincipal, whatever Options.Auth says, so serve through NewGRPCServer when callers must
// authenticate.
func (s *Server) Register(g *grpc.Server) {
	hookverifyv1.RegisterVerifierServiceServer(g, s)
	hookverifyv1.RegisterAdminServiceServer(g, s)
	hookverifyv1.RegisterInboxServiceServer(g, s)
	hookverifyv1.RegisterTokenServiceServer(g, s)
	healthpb.RegisterHealthServer(g, healthService{s})
	reflection.Register(g)
}

// Transport limits for the gRPC listener, which takes connections from anyone who can reach it:
// each holds before authentication. (With Options.Auth, a call without any credential is
// refused as its headers arrive, before its message is read: see authTap. One with a
// credential of a possible form is authenticated once its message is in.)
const (
	// MaxConcurrentStreams bounds the calls one connection runs at once (gRPC's default has
	// none): every stream costs a goroutine and the data buffered for it, so one client opening
	// streams it never finishes grew the server without end. Clients queue calls above it
	// (gRPC-Go waits for a stream to end); an edge's Verify calls take milliseconds each.
	MaxConcurrentStreams = 1000
	// MaxHeaderListSize bounds a call's headers (gRPC's default is 16 MiB, held until the
	// stream ends). Metadata is a token, a request id and trace context; the forwarded webhook
	// headers travel in the message, not here.
	MaxHeaderListSize = 64 << 10
	// ConnectionTimeout bounds a new connection's TLS handshake and HTTP/2 preface (gRPC's
	// default is 120 s): a client that connects and sends nothing held a connection and a
	// goroutine that long. A real caller sends both within a few round trips.
	ConnectionTimeout = 10 * time.Second
)

// KeepaliveMinTime is the shortest interval between a client's pings the server accepts:
// gRPC's own minimum for clients, so no client is sent away for pinging too often.
const KeepaliveMinTime = 10 * time.Second

// NewGRPCServer returns a grpc.Server with hookverify's limits and interceptors (panic
// recovery first, then logging, status-message clipping, metrics, and authentication when
// Options.Auth is set, so that refused calls are logged and counted) and every service registered. Pass TLS credentials
// in extra (grpc.Creds) for mutual TLS. With Options.Auth, a tap (grpc.InTapHandle) refuses
// calls without credentials before their message is read; extra must not set another.
func (s *Server) NewGRPCServer(extra ...grpc.ServerOption) *grpc.Server {
	interceptors := []grpc.UnaryServerInterceptor{s.recoverInterceptor, s.logInterceptor, clipStatusMessage}
	if s.metrics != nil {
		interceptors = append(interceptors, s.metrics.interceptor)
	}
	// The byte bound comes before authentication and everything else that may wait on the
	// database: a refused call drops its body at once.
	interceptors = append(interceptors, s.boundVerifyBytes, rejectInvalidUTF8)
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(MaxRecvMsgSize), grpc.ForceServerCodecV2(newUTF8ReportingCodec()),
		grpc.MaxConcurrentStreams(MaxConcurrentStreams), grpc.MaxHeaderListSize(MaxHeaderListSize), grpc.ConnectionTimeout(ConnectionTimeout),
		// gRPC's default answers a client pinging more than every 5 minutes, or at all while
		// idle, with GOAWAY (too_many_pings) and closes its connection; clients ping idle
		// connections every 30 s (client.KeepaliveTime) to survive NATs that drop idle flows.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: KeepaliveMinTime, PermitWithoutStream: true})}
	streamInterceptors := []grpc.StreamServerInterceptor{rejectInvalidUTF8InStreams}
	if s.auth != nil {
		interceptors = append(interceptors, s.authInterceptor)
		streamInterceptors = append(streamInterceptors, s.authStreamInterceptor)
		// Refuses calls without credentials before their message is read (the interceptors
		// see a call only once it is); gRPC takes a single tap, so extra must not set one.
		opts = append(opts, grpc.InTapHandle(s.authTap))
	}
	opts = append(opts, grpc.ChainStreamInterceptor(streamInterceptors...))
	opts = append(append(opts, grpc.ChainUnaryInterceptor(interceptors...)), extra...)
	g := grpc.NewServer(opts...)
	s.Register(g)
	return g
}

// maxStatusMessage bounds an error's message. Messages quote what the caller sent (ids,
// names, options, scopes), and gRPC carries them in the trailers: quoting megabytes of id
// whole made the answer unreadable (the client's connection failed with an HTTP/2
// COMPRESSION_ERROR, reported as UNAVAILABLE, which clients retry) and the log line huge.
const maxStatusMessage = 1 << 10

// clipStatusMessage cuts every error's message to maxStatusMessage bytes, between UTF-8
// characters, keeping its code and details. It runs inside logInterceptor, so that the log
// gets the clipped message too.
func clipStatusMessage(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err == nil {
		return resp, nil
	}
	st := status.Convert(err)
	msg := st.Message()
	if len(msg) <= maxStatusMessage {
		return resp, err
	}
	cut := maxStatusMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	p := st.Proto()
	p.Message = fmt.Sprintf("%s... (%d bytes cut)", msg[:cut], len(msg)-cut)
	return resp, status.ErrorProto(p)
}

func (s *Server) recoverInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.log.ErrorContext(ctx, "panic in handler", "method", info.FullMethod, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = status.Error(codes.Internal, "internal error")
		}
	}()
	return handler(ctx, req)
}

func (s *Server) logInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx = withRequestID(ctx)
	start := time.Now()
	resp, err := handler(ctx, req)
	level := slog.LevelDebug
	if code := status.Code(err); err != nil && code != codes.Unauthenticated && code != codes.PermissionDenied {
		// A refused caller is logged by refuse, with the reason, and rate-limited there when
		// anyone can cause it: a second line per call here would undo that.
		level = slog.LevelInfo
	}
	if !s.log.Enabled(ctx, level) {
		// The usual case for successful calls: build nothing that would be thrown away.
		return resp, err
	}
	attrs := []any{"method", info.FullMethod, "code", status.Code(err).String(), "duration", time.Since(start)}
	if v, ok := resp.(*hookverifyv1.VerifyResponse); ok {
		attrs = append(attrs, "verdict", v.GetVerdict().String())
		if v.GetRejectReason() != hookverifyv1.RejectReason_REJECT_REASON_UNSPECIFIED {
			attrs = append(attrs, "reason", v.GetRejectReason().String())
		}
	}
	if err != nil {
		attrs = append(attrs, "err", status.Convert(err).Message())
	}
	s.log.Log(ctx, level, "rpc", attrs...)
	return resp, err
}
