// Package client connects Go programs (edge services, the hookverify CLI) to a hookverify server,
// and turns an incoming webhook delivery into a Verify call and its answer back into an HTTP
// reply (see Handler).
package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	_ "google.golang.org/grpc/health" // client-side health checking, see defaultServiceConfig
	"google.golang.org/grpc/keepalive"

	"github.com/hookverify/hookverify/internal/ascii"
	"github.com/hookverify/hookverify/internal/tlsfiles"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// Conn is a connection to a hookverify server with a stub for each service. Calls through the
// stubs carry the API token and are retried as described at Dial.
type Conn struct {
	conn     *grpc.ClientConn
	Verifier hookverifyv1.VerifierServiceClient
	Admin    hookverifyv1.AdminServiceClient
	// Tokens manages API tokens (admin scope).
	Tokens hookverifyv1.TokenServiceClient
	// Inbox is what workers call: Lease, Ack, Nack and the dead letters.
	Inbox hookverifyv1.InboxServiceClient

	// How BuildRequest reads an http.Request; see the options of the same names.
	maxBodyBytes        int64
	publicURLBase       string
	trustForwardedProto bool
}

// maxMessageBytes matches the server's receive limit so the largest allowed body can be sent.
const maxMessageBytes = 34 << 20

// Body limits of BuildRequest.
const (
	// MaxBodyCeiling is the server's ceiling for any endpoint (32 MiB), the largest limit
	// WithMaxBodyBytes accepts: the server can never accept a larger body, and one too large
	// for its gRPC receive limit would fail as if the server were overloaded, and be retried.
	MaxBodyCeiling = 32 << 20
	// DefaultMaxBodyBytes is the limit unless WithMaxBodyBytes says otherwise.
	DefaultMaxBodyBytes = MaxBodyCeiling
)

// Header and URL limits of BuildRequest: the server's. A request past them is refused before
// the call (ErrUnforwardable): the server would refuse it on every retry, and with a body near
// MaxBodyCeiling it would not even fit the server's gRPC receive limit, a failure that looks
// like an overloaded server and is retried.
const (
	// MaxHeaderCount and MaxHeaderBytes bound the forwarded headers (names plus values, the
	// Host header included).
	MaxHeaderCount = 500
	MaxHeaderBytes = 256 << 10
	// MaxURLBytes bounds the forwarded URL.
	MaxURLBytes = 16 << 10
	// MaxMethodBytes bounds the forwarded HTTP method: net/http accepts a method of any length.
	MaxMethodBytes = 32
)

// KeepaliveTime and KeepaliveTimeout are how often Dial's connections ping the server when
// idle, and how long they wait for the answer before closing. The server (server.KeepaliveMinTime)
// accepts pings this often, idle or not.
const (
	KeepaliveTime    = 30 * time.Second
	KeepaliveTimeout = 10 * time.Second
)

// defaultServiceConfig balances the calls over every address the target resolves to (a DNS
// name of several instances), and only over the instances whose gRPC health reports SERVING.
// gRPC's own default sends every call to the first address that accepts a connection, and
// keeps sending there while that instance answers UNAVAILABLE (its storage down or not open
// yet) and the others are idle; a balancer without health checking still sends such an
// instance its share, and a call whose few retries all land there reaches the provider as a
// 503 (GitHub never retries one). With a single address this behaves as gRPC's default, and a
// call fails at once with UNAVAILABLE while that instance is not SERVING, as the server would
// have answered it.
const defaultServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{"serviceName":""}}`

// ungatedServiceConfig balances as defaultServiceConfig does, whatever the instances' health
// (WithoutHealthGate).
const ungatedServiceConfig = `{"loadBalancingConfig":[{"round_robin":{}}]}`

// Option configures Dial.
type Option func(*config)

type config struct {
	creds credentials.TransportCredentials
	// tlsFiles are WithTLSFiles' CA, certificate and key files, read by Dial (nil without).
	tlsFiles []string
	logger   *slog.Logger
	tlsErr   error
	// ungated: WithoutHealthGate.
	ungated     bool
	token       string
	retry       RetryPolicy
	grpcOptions []grpc.DialOption

	maxBodyBytes  int64
	publicURLBase string
	// publicURLBaseGiven is WithPublicURLBase's base as given, which Dial checks: "//" has no
	// trailing slash left to drop and would read as no base at all.
	publicURLBaseGiven  string
	trustForwardedProto bool
}

// errTLSOptions: each of WithTLS and WithTLSFiles configures the whole TLS connection, so the
// second would drop in silence what the first set (a server name, a client certificate).
var errTLSOptions = errors.New("client: WithTLS and WithTLSFiles exclude each other; give one")

// WithTLS encrypts the connection with cfg (server name, root CAs, client certificates). Dial
// refuses it together with WithTLSFiles.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		c.creds = credentials.NewTLS(cfg.Clone())
		if c.tlsFiles != nil {
			c.tlsErr = errTLSOptions
		}
	}
}

// WithTLSFiles encrypts the connection using PEM files: caFile holds the CAs that sign the
// server's certificate (empty: the system roots), certFile and keyFile a client certificate
// for mutual TLS (both empty: none). The files are read by Dial, which reports any problem,
// and read again at each new connection's handshake when they changed, so that a renewed
// client certificate or CA bundle is used without a restart. If changed files do not load
// (a certificate written before its key), the previous ones stay in use, and a failed
// handshake's error says so.
// With WithConnLogger, a reload and a change that does not load are logged. Dial refuses it
// together with WithTLS.
func WithTLSFiles(caFile, certFile, keyFile string) Option {
	return func(c *config) {
		c.tlsFiles = []string{caFile, certFile, keyFile}
		if c.creds != nil {
			c.tlsErr = errTLSOptions
		}
	}
}

// WithoutHealthGate sends calls to the instances whatever their gRPC health says, for one-shot
// tools (the CLI) that want the server's own answer rather than a refusal by the client: an
// instance whose storage is not open yet answers "storage not ready yet", and ListProviders,
// which needs no storage, still works. Edges and workers want the gate (see Dial).
func WithoutHealthGate() Option {
	return func(c *config) { c.ungated = true }
}

// WithConnLogger logs what the connection does on its own, outside any call: TLS files
// (WithTLSFiles) reloaded after a change, or changed but not loading. A long-running edge
// wants both in its log: the second is the only sign, before the old certificate expires,
// that a renewal went wrong. Without it nothing is logged.
func WithConnLogger(log *slog.Logger) Option {
	return func(c *config) { c.logger = log }
}

// tlsFilesCredentials reads the files of WithTLSFiles, and watches them as it describes.
func (c *config) tlsFilesCredentials() (credentials.TransportCredentials, error) {
	if (c.tlsFiles[1] == "") != (c.tlsFiles[2] == "") {
		return nil, errors.New("client: a client certificate needs both the certificate and the key file")
	}
	var onError func(error)
	var onBuilt func(*tls.Config)
	if log := c.logger; log != nil {
		onError = func(err error) {
			log.Error("the TLS files for the verifier changed but do not load; still using the previous ones", "err", err)
		}
		onBuilt = func(*tls.Config) {
			log.Info("reloaded the TLS files for the verifier", "files", strings.Join(slices.DeleteFunc(slices.Clone(c.tlsFiles), func(p string) bool { return p == "" }), ", "))
		}
	}
	r, err := tlsfiles.NewReloader(c.tlsFiles, clientTLSConfig, onError, onBuilt)
	if err != nil {
		return nil, err
	}
	return r.Credentials(), nil
}

// clientTLSConfig builds the configuration from the contents of the CA, certificate and key
// files (nil when not given).
func clientTLSConfig(contents [][]byte) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := contents[0]; ca != nil {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return nil, errors.New("client: the CA file holds no PEM certificate")
		}
		cfg.RootCAs = pool
	}
	if contents[1] != nil {
		cert, err := tls.X509KeyPair(contents[1], contents[2])
		if err != nil {
			return nil, fmt.Errorf("client: loading client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// WithToken sends the API token as the gRPC metadata "authorization: Bearer <token>" on every
// call. Because the token would travel in clear otherwise, Dial refuses it without WithTLS or
// WithTLSFiles unless the address is loopback (transport credentials passed through
// WithGRPCOptions are not seen by this check).
func WithToken(token string) Option {
	return func(c *config) { c.token = token }
}

// ErrTokenInClear is Dial's refusal of a token (WithToken) it would send without TLS to an
// address that is not on loopback: a token read off the wire is a caller's identity taken.
var ErrTokenInClear = errors.New("client: refusing to send the API token in clear")

// WithRetry replaces DefaultRetryPolicy. RetryPolicy{MaxAttempts: 1} turns retries off.
func WithRetry(p RetryPolicy) Option {
	return func(c *config) { c.retry = p }
}

// WithGRPCOptions passes raw dial options to grpc.NewClient after hookverify's own, so they
// take precedence (a custom dialer, interceptors, other transport credentials).
func WithGRPCOptions(opts ...grpc.DialOption) Option {
	return func(c *config) { c.grpcOptions = append(c.grpcOptions, opts...) }
}

// WithMaxBodyBytes sets the largest body BuildRequest reads, from 1 to MaxBodyCeiling (default
// DefaultMaxBodyBytes; Dial refuses other values); larger bodies fail with ErrBodyTooLarge
// without being forwarded. The server applies each endpoint's own, usually smaller, limit on
// top.
func WithMaxBodyBytes(n int64) Option {
	return func(c *config) { c.maxBodyBytes = n }
}

// WithPublicURLBase makes the forwarded URL base + the request URI as received, for edges
// behind a proxy or load balancer that cannot see the URL the provider called. base is the
// scheme and host the provider uses, e.g. "https://hooks.example.com", and at most a path (a
// prefix the proxy strips); every trailing slash is dropped, since the request URI begins
// with one ("https://h//" forwards "https://h/hooks/ep", as the Node edge does). Dial refuses
// a base with another scheme, no host, credentials, a query, a fragment or white space.
// This matters only for providers that sign the URL (see ProviderInfo.needs_url).
func WithPublicURLBase(base string) Option {
	return func(c *config) { c.publicURLBase, c.publicURLBaseGiven = strings.TrimRight(base, "/"), base }
}

// WithTrustForwardedProto takes the URL scheme from the X-Forwarded-Proto header when the edge
// itself receives plain HTTP. Use it only behind a proxy that sets (and overwrites) the header:
// otherwise the provider's caller controls it.
func WithTrustForwardedProto() Option {
	return func(c *config) { c.trustForwardedProto = true }
}

// Dial connects to addr (host:port, or any gRPC target). Without TLS options the connection is
// plaintext, which the server only allows on loopback.
//
// addr may also be a list of addresses as gRPC C-core and grpc-js take it (grpc-go itself does
// not): "ipv4:10.0.0.1:7443,10.0.0.2:7443" or "ipv6:[2001:db8::1]:7443,[2001:db8::2]:7443",
// port 443 where an entry names none, an IPv6 zone written %25zone. Dial refuses a list it
// cannot connect to (empty, a host name, a bad port) at once. Over TLS each address is verified
// as itself, as if dialed alone (its certificate names its IP address), unless WithTLS's
// configuration has a ServerName, which then applies to every address.
//
// When addr resolves to several instances (a DNS name with several addresses, an address list),
// calls are balanced round robin over those whose gRPC health reports SERVING, so that an instance
// starting, shutting down or without its storage gets none while others can take them. A
// service config passed with WithGRPCOptions (grpc.WithDefaultServiceConfig) replaces this
// one: keep "healthCheckConfig":{"serviceName":""} in it.
//
// Calls to Verify and to the read-only methods (Get*, List*) are retried with exponential
// backoff and full jitter when they fail with UNAVAILABLE or with RESOURCE_EXHAUSTED carrying
// RetryInfo (backpressure; without it the message was over the receive limit), within the
// RetryPolicy's attempts and total time and never past the context's deadline. Retrying Verify is safe
// because the server's claim is idempotent by event identity: if an attempt whose answer was
// lost had in fact committed the delivery, the retry is answered DUPLICATE with the same
// operation key, never a second ACCEPTED, so downstream work keyed on the operation key runs
// once (except on a Dropbox endpoint, where every authenticated delivery is a new event, as a
// provider's own retry would be). Methods that change state are not retried, since their retry
// is not idempotent.
func Dial(addr string, opts ...Option) (*Conn, error) {
	cfg := config{retry: DefaultRetryPolicy, maxBodyBytes: DefaultMaxBodyBytes}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.tlsErr != nil {
		return nil, cfg.tlsErr
	}
	if cfg.tlsFiles != nil {
		creds, err := cfg.tlsFilesCredentials()
		if err != nil {
			return nil, err
		}
		cfg.creds = creds
	}
	if err := cfg.retry.validate(); err != nil {
		return nil, err
	}
	if cfg.publicURLBaseGiven != "" {
		if err := CheckPublicURLBase(cfg.publicURLBaseGiven); err != nil {
			return nil, err
		}
	}
	if cfg.maxBodyBytes <= 0 || cfg.maxBodyBytes > MaxBodyCeiling {
		return nil, fmt.Errorf("client: body limit %d is not between 1 and the server's ceiling of %d bytes", cfg.maxBodyBytes, MaxBodyCeiling)
	}
	list, err := parseAddressList(addr)
	if err != nil {
		return nil, err
	}
	secure := cfg.creds != nil
	if !secure {
		cfg.creds = insecure.NewCredentials()
	}
	serviceConfig := defaultServiceConfig
	if cfg.ungated {
		serviceConfig = ungatedServiceConfig
	}
	all := []grpc.DialOption{
		grpc.WithTransportCredentials(cfg.creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(maxMessageBytes), grpc.MaxCallRecvMsgSize(maxMessageBytes)),
		// Reconnect within seconds after the server restarts, not after gRPC's default of up
		// to two minutes: providers give an edge about ten seconds.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 3 * time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
		// Ping an idle connection, so that a NAT or load balancer that drops idle flows
		// silently does not leave it looking ready while every call on it waits out its
		// deadline until TCP gives up (minutes): the ping keeps the flow alive, or finds it
		// dead within KeepaliveTime + KeepaliveTimeout, and the next call reconnects.
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: KeepaliveTimeout, PermitWithoutStream: true}),
		grpc.WithChainUnaryInterceptor(cfg.retry.interceptor()),
		grpc.WithDefaultServiceConfig(serviceConfig),
	}
	if cfg.token != "" {
		if err := checkToken(cfg.token); err != nil {
			return nil, err
		}
		if !secure && !isLoopback(addr) {
			return nil, fmt.Errorf("%w to %s; use WithTLS or WithTLSFiles", ErrTokenInClear, addr)
		}
		all = append(all, grpc.WithPerRPCCredentials(bearer{token: cfg.token, secure: secure}))
	}
	all = append(all, cfg.grpcOptions...)
	if list != nil {
		// After the caller's options: gRPC takes the first resolver given for a scheme, so
		// one passed with WithGRPCOptions still wins.
		all = append(all, grpc.WithResolvers(list.builder(cfg.creds.Info().ServerName == "")))
	}
	cc, err := grpc.NewClient(addr, all...)
	if err != nil {
		return nil, fmt.Errorf("client: dialing %s: %w", addr, err)
	}
	return &Conn{
		conn:                cc,
		Verifier:            hookverifyv1.NewVerifierServiceClient(cc),
		Admin:               hookverifyv1.NewAdminServiceClient(cc),
		Tokens:              hookverifyv1.NewTokenServiceClient(cc),
		Inbox:               hookverifyv1.NewInboxServiceClient(cc),
		maxBodyBytes:        cfg.maxBodyBytes,
		publicURLBase:       cfg.publicURLBase,
		trustForwardedProto: cfg.trustForwardedProto,
	}, nil
}

// GRPC returns the underlying connection (for health checks, say).
func (c *Conn) GRPC() *grpc.ClientConn { return c.conn }

// Close closes the connection.
func (c *Conn) Close() error { return c.conn.Close() }

// bearer sends the API token with every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false only for plaintext connections Dial allowed (loopback).
func (b bearer) RequireTransportSecurity() bool { return b.secure }

// checkToken refuses tokens gRPC metadata cannot carry; the message never quotes the token.
func checkToken(token string) error {
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return errors.New("client: the API token must be printable ASCII without spaces")
		}
	}
	return nil
}

// isLoopback reports whether a gRPC target names a loopback address or a Unix socket, or is an
// address list (ipv4:, ipv6:) of loopback addresses only.
func isLoopback(target string) bool {
	if strings.HasPrefix(target, "unix:") || strings.HasPrefix(target, "unix-abstract:") {
		// gRPC reads a target that does not parse as a URL ("unix://:A") as a DNS name.
		_, err := url.Parse(target)
		return err == nil
	}
	if list, err := parseAddressList(target); list != nil || err != nil {
		return err == nil && list.allLoopback()
	}
	for _, scheme := range []string{"dns:///", "passthrough:///"} {
		target = strings.TrimPrefix(target, scheme)
	}
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	if ascii.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckPublicURLBase refuses a base that cannot be the front of the URL a provider called
// (Dial checks WithPublicURLBase's with it; a command line can check its flag before):
// URL-signing providers sign that URL byte for byte, so every one of their deliveries would be
// rejected with a 4xx, which most never retry. The message never quotes the base, which may
// hold credentials.
func CheckPublicURLBase(base string) error {
	const want = "client: the public URL base must be http(s)://host with at most a path"
	if !strings.HasPrefix(base, "https://") && !strings.HasPrefix(base, "http://") {
		return errors.New(want)
	}
	if strings.ContainsFunc(base, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return errors.New(want + ", without spaces or control characters")
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || strings.Contains(base, "#") {
		return errors.New(want + ", without credentials, query or fragment")
	}
	return nil
}
