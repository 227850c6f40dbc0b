package server

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/hookverify/hookverify/internal/ascii"
	"github.com/hookverify/hookverify/internal/ratelog"
	"github.com/hookverify/hookverify/storage"
)

// DefaultTokenCacheTTL bounds how long a token revoked through another instance keeps working
// on this one. The instance that revokes a token refuses it at once.
const DefaultTokenCacheTTL = 5 * time.Second

// maxCachedTokens bounds the token cache, which also remembers unknown tokens (so that a
// caller guessing tokens does not cost a database read each): when full, a token not in it is
// looked up without being cached, until entries expire.
const maxCachedTokens = 10000

// tokenTouchInterval is how often, at most, an instance records a token's last use.
const tokenTouchInterval = time.Minute

// The messages callers get. They are the same whatever the detail, which goes to the log:
// an unknown, a revoked and a malformed token look alike, and a denied call does not say
// whether the endpoint or delivery it names exists.
const (
	msgUnauthenticated  = "authentication required: send a valid API token (authorization: Bearer <token>) or client certificate"
	msgPermissionDenied = "permission denied: the caller's scopes do not allow this call"
)

// AuthConfig turns caller authentication on. Every call but health checks and reflection then
// needs an API token (gRPC metadata "authorization: Bearer <token>", checked against the
// TokenStore) or a client certificate that the TLS layer verified against the client CA, and
// the scopes of the caller must allow the call (see the authorization table in authz.go).
type AuthConfig struct {
	// CertScopes maps the subject of a verified client certificate, as
	// x509.Certificate.Subject.String() writes it (e.g. "CN=edge-1,O=Acme"), to the
	// caller's scopes. A certificate whose subject is not listed authenticates but may do
	// nothing. That text keeps only the last CN and serialNumber of a subject, so a
	// certificate whose subject names either more than once is refused.
	CertScopes map[string][]Scope
	// TokenCacheTTL bounds how long a token revoked through another instance is still
	// accepted here (default DefaultTokenCacheTTL; negative: look every token up each call).
	TokenCacheTTL time.Duration
	// TrustsClientCA, when set, reports whether a certificate that anchored a verified client
	// chain (the last certificate of the chain: one of the client CAs when the handshake was
	// made) is still a client CA. It is asked on every call, so that a CA taken out of the
	// client CA file (a compromised one, say) stops authenticating the connections it had
	// verified, not only new ones; it must be cheap.
	TrustsClientCA func(anchor *x509.Certificate) bool
}

// caller is an authenticated principal with its scopes.
type caller struct {
	principal Principal
	scopes    scopeSet
}

// authenticator checks credentials; it is nil when authentication is off.
type authenticator struct {
	certScopes     map[string]scopeSet
	tokens         *tokenCache
	trustsClientCA func(*x509.Certificate) bool
}

func newAuthenticator(cfg *AuthConfig) *authenticator {
	if cfg == nil {
		return nil
	}
	a := &authenticator{certScopes: map[string]scopeSet{}, trustsClientCA: cfg.TrustsClientCA}
	for subject, scopes := range cfg.CertScopes {
		a.certScopes[subject] = scopeSet(scopes)
	}
	ttl := cfg.TokenCacheTTL
	switch {
	case ttl == 0:
		ttl = DefaultTokenCacheTTL
	case ttl < 0:
		ttl = 0
	}
	a.tokens = newRefreshCache[[sha256.Size]byte, cachedToken](ttl, maxCachedTokens)
	return a
}

// authFailure is why a call was refused; the reason is logged, never sent.
type authFailure struct {
	code   codes.Code
	reason string
}

func (f *authFailure) Error() string { return f.reason }

func unauthenticated(reason string) *authFailure {
	return &authFailure{code: codes.Unauthenticated, reason: reason}
}

func denied(reason string) *authFailure {
	return &authFailure{code: codes.PermissionDenied, reason: reason}
}

// authenticate finds the caller of ctx. A bearer token, when sent, decides alone (a client
// certificate on the same connection is then not consulted); otherwise a verified client
// certificate does.
func (s *Server) authenticate(ctx context.Context) (caller, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	token, chains, err := presentedCredential(ctx, md)
	if err != nil {
		return caller{}, err
	}
	if token != "" {
		return s.authenticateToken(ctx, token)
	}
	return s.authenticateCert(chains)
}

// presentedCredential returns the credential a call carries, the bearer token of md or else
// the verified chains of ctx's client certificate, having checked all that needs neither the
// call's message nor the database: a token's header form and length, a certificate's
// presence. authTap runs it as a call's headers arrive, authenticate again with the rest.
func presentedCredential(ctx context.Context, md metadata.MD) (token string, chains [][]*x509.Certificate, err error) {
	if values := md.Get("authorization"); len(values) > 0 {
		token, err := bearerToken(values)
		if err != nil {
			return "", nil, err
		}
		if len(token) < minBootstrapLen {
			// Every token is at least this long: issued ones (tokenPrefix and 43 characters)
			// and the bootstrap one (CheckBootstrapToken). Such a token cannot be known, and
			// refusing it here costs no lookup.
			return "", nil, unauthenticated("unknown API token (shorter than any token)")
		}
		return token, nil, nil
	}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.VerifiedChains) > 0 && len(info.State.VerifiedChains[0]) > 0 {
			return "", info.State.VerifiedChains, nil
		}
	}
	return "", nil, unauthenticated("no API token and no verified client certificate")
}

// authTap refuses a call to a method that needs authentication, as its headers arrive and
// before gRPC reads its message, when it carries no credential that could authenticate it
// (presentedCredential). The interceptors authenticate only once a message is in, up to
// MaxRecvMsgSize each and MaxConcurrentStreams at once per connection: a caller without any
// credential could make the server read and hold that much, sending messages it never
// finishes. A token of a possible form, or a certificate, is checked by authInterceptor as
// before. gRPC runs the tap on a connection's reader goroutine, holding the transport's lock:
// it must not block, so it looks nothing up; refuse only counts and logs (rate-limited).
// Methods without a rule are let through: the open ones, and the unknown ones, which gRPC
// answers UNIMPLEMENTED itself without reading their message (so the metric's method label
// stays bounded).
func (s *Server) authTap(ctx context.Context, info *tap.Info) (context.Context, error) {
	if _, ruled := methodRules[info.FullMethodName]; !ruled || isOpenMethod(info.FullMethodName) {
		return ctx, nil
	}
	if _, _, err := presentedCredential(ctx, info.Header); err != nil {
		err = s.refuse(ctx, info.FullMethodName, Principal{}, err)
		s.metrics.observeRefusedAtHeaders(info.FullMethodName, status.Code(err))
		return ctx, err
	}
	return ctx, nil
}

// bearerToken extracts the token of an authorization header: exactly one value, scheme Bearer
// (any case), a non-empty token of printable ASCII.
func bearerToken(values []string) (string, error) {
	if len(values) != 1 {
		return "", unauthenticated("several authorization headers")
	}
	scheme, token, ok := strings.Cut(values[0], " ")
	if !ok || !ascii.EqualFold(scheme, "Bearer") || token == "" {
		return "", unauthenticated("malformed authorization header (want: Bearer <token>)")
	}
	for i := 0; i < len(token); i++ {
		if token[i] < 0x21 || token[i] > 0x7e {
			return "", unauthenticated("malformed authorization header (token is not printable ASCII)")
		}
	}
	return token, nil
}

func (s *Server) authenticateToken(ctx context.Context, token string) (caller, error) {
	hash := sha256.Sum256([]byte(token))
	entry, err := s.lookupToken(ctx, hash)
	if err != nil {
		return caller{}, err
	}
	switch {
	case !entry.found:
		return caller{}, unauthenticated("unknown API token")
	case entry.revoked:
		return caller{}, unauthenticated("revoked API token " + entry.id)
	}
	return caller{principal: Principal{Name: "token:" + entry.id, Method: "token"}, scopes: entry.scopes}, nil
}

// authenticateCert maps a client certificate the TLS handshake verified, through chains, to
// its caller. The handshake checked the validity periods of the chain, and its CA, once; a
// connection can outlive its leaf or an issuing CA, or its CA's removal from the client CAs,
// so they are checked again on every call.
func (s *Server) authenticateCert(chains [][]*x509.Certificate) (caller, error) {
	leaf := chains[0][0]
	if err := s.usableChain(chains, s.now()); err != nil {
		return caller{}, err
	}
	if attr := repeatedSingleAttribute(leaf.Subject); attr != "" {
		return caller{}, unauthenticated("client certificate subject " + signedSubject(leaf) + " names " + attr +
			" more than once; refused, since its subject text (" + leaf.Subject.String() + ") would keep only the last")
	}
	subject := leaf.Subject.String()
	return caller{principal: Principal{Name: "cert:" + subject, Method: "mtls"}, scopes: s.auth.certScopes[subject]}, nil
}

// usableChain returns nil when some verified chain is, at now, as the handshake required of
// it: every certificate within its validity period, and anchored by a CA that is still a
// client CA. Both must hold of one chain: a cross-signed intermediate gives a certificate a
// chain to each root, and a connection whose only valid chain runs to a CA taken out of the
// client CAs, and whose only chain to a trusted CA has expired, could no longer make a
// handshake. Else it returns why the last chain fails. A chain is a few certificates, so this
// costs a few time comparisons (and CA checks) per call.
func (s *Server) usableChain(chains [][]*x509.Certificate, now time.Time) error {
	leaf := chains[0][0]
	var why error
	for _, chain := range chains {
		if c := outsideValidity(chain, now); c != nil {
			if c == leaf {
				why = unauthenticated("client certificate " + leaf.Subject.String() + " is outside its validity period")
			} else {
				why = unauthenticated("client certificate " + leaf.Subject.String() + ": its issuer " + c.Subject.String() + " is outside its validity period")
			}
			continue
		}
		anchor := chain[len(chain)-1]
		if trusts := s.auth.trustsClientCA; trusts != nil && !trusts(anchor) {
			why = unauthenticated("client certificate " + leaf.Subject.String() + ": its CA " + anchor.Subject.String() + " is no longer a client CA")
			continue
		}
		return nil
	}
	return why
}

// outsideValidity returns a certificate of chain that is not within its validity period at
// now, or nil when all are.
func outsideValidity(chain []*x509.Certificate, now time.Time) *x509.Certificate {
	for _, c := range chain {
		if now.Before(c.NotBefore) || now.After(c.NotAfter) {
			return c
		}
	}
	return nil
}

// Attribute types that pkix.Name holds in a single field, so that its String() keeps only the
// last of several: a subject "O=Acme, CN=intern-laptop, CN=ops-admin" prints as
// "CN=ops-admin,O=Acme". Other repeated attributes (O, OU, DC, ...) are all kept.
var (
	oidCommonName   = asn1.ObjectIdentifier{2, 5, 4, 3}
	oidSerialNumber = asn1.ObjectIdentifier{2, 5, 4, 5}
)

// repeatedSingleAttribute names the attribute ("CN" or "SERIALNUMBER") that subject repeats
// and its text would drop, or returns "" when its text shows every attribute.
func repeatedSingleAttribute(subject pkix.Name) string {
	var cns, serials int
	for _, atv := range subject.Names {
		switch {
		case atv.Type.Equal(oidCommonName):
			cns++
		case atv.Type.Equal(oidSerialNumber):
			serials++
		}
	}
	switch {
	case cns > 1:
		return "CN"
	case serials > 1:
		return "SERIALNUMBER"
	}
	return ""
}

// signedSubject writes the subject exactly as the CA signed it (RFC 4514, every attribute in
// its order), for the log of a refused certificate.
func signedSubject(leaf *x509.Certificate) string {
	var rdns pkix.RDNSequence
	if rest, err := asn1.Unmarshal(leaf.RawSubject, &rdns); err != nil || len(rest) > 0 {
		return leaf.Subject.String()
	}
	return rdns.String()
}

// tokenCache remembers verified token hashes (and unknown ones) for a short TTL, so that a
// call costs no database read; refreshCache says how concurrent callers share a load.
type tokenCache = refreshCache[[sha256.Size]byte, cachedToken]

type cachedToken struct {
	found   bool
	revoked bool
	id      string
	scopes  scopeSet
}

// lookupToken returns the cached state of a token hash, loading it when absent or expired.
// Storage failures are UNAVAILABLE and not cached.
func (s *Server) lookupToken(ctx context.Context, hash [sha256.Size]byte) (cachedToken, error) {
	return s.auth.tokens.get(ctx, hash, func(ctx context.Context) (cachedToken, error) { return s.loadToken(ctx, hash) })
}

// loadToken reads a token by its hash, and records its use when the last record is old.
func (s *Server) loadToken(ctx context.Context, hash [sha256.Size]byte) (cachedToken, error) {
	st, err := s.storage()
	if err != nil {
		return cachedToken{}, err
	}
	var e cachedToken
	tok, err := st.TokenByHash(ctx, hash[:])
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return cachedToken{}, s.storageStatus(ctx, "authenticate", err)
	default:
		e.found, e.id, e.revoked = true, tok.ID, !tok.RevokedAt.IsZero()
		e.scopes = parseStoredScopes(ctx, s, tok)
		if !e.revoked && s.clock().Sub(tok.LastUsedAt) >= tokenTouchInterval {
			// Recorded when the cache loads the token only, so at most about once a minute
			// per instance.
			if err := st.TouchToken(ctx, tok.ID, s.clock()); err != nil {
				s.log.WarnContext(ctx, "cannot record a token's last use", "token_id", tok.ID, "err", err)
			}
		}
	}
	return e, nil
}

// parseStoredScopes reads a stored token's scopes; one that no longer parses is logged and
// ignored, which can only take permissions away.
func parseStoredScopes(ctx context.Context, s *Server, tok storage.Token) scopeSet {
	scopes := make(scopeSet, 0, len(tok.Scopes))
	for _, text := range tok.Scopes {
		sc, err := ParseScope(text)
		if err != nil {
			s.log.ErrorContext(ctx, "stored token scope does not parse; ignored", "token_id", tok.ID, "err", err)
			continue
		}
		scopes = append(scopes, sc)
	}
	return scopes
}

// openMethods need no authentication: health checks (load balancers, orchestrators) and
// reflection (it describes the API, which is public anyway). They are named one by one, not
// by service: a method a later gRPC release adds to either service stays closed until it is
// reviewed and listed here.
var openMethods = map[string]bool{
	healthpb.Health_Check_FullMethodName:                                   true,
	healthpb.Health_Watch_FullMethodName:                                   true,
	healthpb.Health_List_FullMethodName:                                    true,
	reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName:      true,
	reflectionv1alpha.ServerReflection_ServerReflectionInfo_FullMethodName: true,
}

func isOpenMethod(fullMethod string) bool { return openMethods[fullMethod] }

// authInterceptor authenticates the caller, sets its Principal in the context, and authorizes
// the call by the method's rule; a method without a rule is refused.
func (s *Server) authInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if isOpenMethod(info.FullMethod) {
		return handler(ctx, req)
	}
	c, err := s.authenticate(ctx)
	if err == nil {
		ctx = WithPrincipal(ctx, c.principal)
		err = s.authorize(ctx, c, info.FullMethod, req)
	}
	if err != nil {
		return nil, s.refuse(ctx, info.FullMethod, c.principal, err)
	}
	resp, err := handler(ctx, req)
	if err == nil {
		if rule := methodRules[info.FullMethod]; rule.filter != nil {
			rule.filter(c.scopes, resp)
		}
	}
	return resp, err
}

// authStreamInterceptor lets open streaming methods (health Watch, reflection) through and
// refuses every other stream: hookverify has no streaming RPC that authorizes its requests.
func (s *Server) authStreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if isOpenMethod(info.FullMethod) {
		return handler(srv, ss)
	}
	c, err := s.authenticate(ss.Context())
	if err == nil {
		err = denied("streaming method without an authorization rule")
	}
	return s.refuse(ss.Context(), info.FullMethod, c.principal, err)
}

// refuse turns an authentication or authorization failure into the status the caller sees,
// logs its reason and counts it. Other errors (storage unavailable) pass through.
func (s *Server) refuse(ctx context.Context, method string, p Principal, err error) error {
	var f *authFailure
	if !errors.As(err, &f) {
		return err
	}
	msg := msgPermissionDenied
	if f.code == codes.Unauthenticated {
		msg = msgUnauthenticated
	}
	s.metrics.observeAuthFailure(method, f.code)
	attrs := []any{"method", method, "code", f.code.String(), "reason", f.reason}
	if p.Name != "" {
		attrs = append(attrs, "principal", p.Name)
	}
	if f.code == codes.Unauthenticated {
		ok, heldBack := s.refusalLog.allow(f.reason)
		if !ok {
			return status.Error(f.code, msg)
		}
		attrs = append(attrs, "not_logged_since_last", heldBack)
	}
	s.log.InfoContext(ctx, "call refused", attrs...)
	return status.Error(f.code, msg)
}

// refusalLog rate-limits the lines of calls refused as unauthenticated, per reason: anyone who
// reaches the port causes them (no token, an unknown one), and at a line per call a flood
// filled the disk. Each reason is logged at most once per handshakeLogInterval, with the
// count held back since; the metric counts every one. Calls refused permission are logged
// one by one: an authenticated caller did them, whom the trail must name.
type refusalLog struct {
	log *slog.Logger

	mu       sync.Mutex
	byReason map[string]*ratelog.Limiter
}

// maxRefusalReasons bounds refusalLog's limiters: reasons that name a revoked token or a
// certificate subject vary, and past this many the rest share one limiter.
const maxRefusalReasons = 100

func (r *refusalLog) allow(reason string) (ok bool, heldBack int) {
	r.mu.Lock()
	key := reason
	if _, known := r.byReason[key]; !known && len(r.byReason) >= maxRefusalReasons {
		key = "" // every other reason
	}
	l := r.byReason[key]
	if l == nil {
		if r.byReason == nil {
			r.byReason = map[string]*ratelog.Limiter{}
		}
		what := "calls refused as unauthenticated: " + reason
		if key == "" {
			what = "calls refused as unauthenticated, for other reasons"
		}
		l = ratelog.ForLog(r.log, handshakeLogInterval, what)
		r.byReason[key] = l
	}
	r.mu.Unlock()
	return l.Allow()
}
