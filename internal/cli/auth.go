package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	"google.golang.org/grpc/credentials"

	"github.com/hookverify/hookverify/internal/tlsfiles"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// bootstrapTokenEnv names the environment variable whose token becomes the first admin token.
const bootstrapTokenEnv = "HOOKVERIFY_BOOTSTRAP_TOKEN"

// bootstrapTokenFromEnv reads $HOOKVERIFY_BOOTSTRAP_TOKEN trimmed as the CLI trims the token it
// sends (readToken): a variable filled from an env file or a Kubernetes secret keeps the file's
// trailing newline, and serve refused the token for it although the client would send it
// without.
func bootstrapTokenFromEnv() string {
	return strings.TrimSpace(strings.TrimPrefix(os.Getenv(bootstrapTokenEnv), "\ufeff"))
}

// authFlags are serve's transport security and caller authentication settings.
type authFlags struct {
	tlsCert, tlsKey string
	clientCA        string
	certScopes      string
	requireAuth     bool
	tokenCacheTTL   time.Duration

	// clientCAs are the CAs of --client-ca as last loaded, for the per-call check.
	clientCAs *clientCAs
}

// clientCAs tracks the certificates of --client-ca as the TLS configuration last loaded them,
// so that every call can check that the CA its connection was verified against is still one:
// the TLS layer checks only at the handshake, and a CA taken out of the file (a compromised
// one) would otherwise keep authenticating the connections it had verified.
type clientCAs struct {
	// anchors holds the DER of every certificate in the file as loaded.
	anchors atomic.Pointer[map[string]bool]
	// lookedAt is when the files were last read for a call (Unix nanoseconds); reload reads
	// them, and builds the TLS configuration again if they changed.
	lookedAt atomic.Int64
	reload   func()
}

// clientCALookInterval bounds how often calls make the server read its TLS files: a CA taken
// out of --client-ca stops authenticating within about this long.
const clientCALookInterval = time.Second

// trusts reports whether anchor is in --client-ca as last loaded, reading the files again
// first if the last look is older than clientCALookInterval.
func (c *clientCAs) trusts(anchor *x509.Certificate) bool {
	now := time.Now().UnixNano()
	if last := c.lookedAt.Load(); now-last > int64(clientCALookInterval) && c.lookedAt.CompareAndSwap(last, now) && c.reload != nil {
		c.reload()
	}
	m := c.anchors.Load()
	return m != nil && (*m)[string(anchor.Raw)]
}

func (a *authFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.tlsCert, "tls-cert", "", "PEM certificate (chain) of the gRPC server; with --tls-key, serve TLS")
	fs.StringVar(&a.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&a.clientCA, "client-ca", "", "PEM CAs whose client certificates authenticate callers (mutual TLS; needs --tls-cert; turns authentication on)")
	fs.StringVar(&a.certScopes, "cert-scopes", "", "file mapping client certificate subjects to scopes, one per line: SCOPE[,SCOPE...] SUBJECT (e.g. 'verify:acme-* CN=edge-1,O=Acme')")
	fs.BoolVar(&a.requireAuth, "require-auth", false, "require an API token (or a client certificate with --client-ca) on every call but health and reflection")
	fs.DurationVar(&a.tokenCacheTTL, "token-cache-ttl", server.DefaultTokenCacheTTL, "how long a token revoked through another instance still works here (0: look every token up on every call)")
}

// enabled reports whether callers must authenticate.
func (a *authFlags) enabled() bool { return a.requireAuth || a.clientCA != "" }

// check enforces the listen rule: a non-loopback address needs authentication, and is
// warned about loudly without TLS (tokens would cross the network in clear).
func (a *authFlags) check(log *slog.Logger, listen string) error {
	if a.tokenCacheTTL < 0 {
		// offWhenZero would take it as "no cache" in silence, where serve's other TTLs are
		// refused out of range (checkRanges).
		return usagef("--token-cache-ttl %v: want 0 (no cache) or more", a.tokenCacheTTL)
	}
	if (a.tlsCert == "") != (a.tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if a.clientCA != "" && a.tlsCert == "" {
		return usagef("--client-ca needs --tls-cert and --tls-key: client certificates are only seen over TLS")
	}
	if a.certScopes != "" && a.clientCA == "" {
		return usagef("--cert-scopes needs --client-ca")
	}
	loopback, err := isLoopbackAddr(listen)
	if err != nil {
		return usagef("--listen: %v", err)
	}
	if loopback {
		return nil
	}
	if !a.enabled() {
		return usagef("--listen %q is not a loopback address: anyone who reaches it could manage endpoints and read the inbox; turn caller authentication on with --require-auth (API tokens) and/or --client-ca (mutual TLS), or listen on 127.0.0.1, ::1 or localhost", listen)
	}
	if a.tlsCert == "" {
		log.Warn("SERVING WITHOUT TLS ON A NON-LOOPBACK ADDRESS: API tokens and webhook bodies cross the network in clear; set --tls-cert and --tls-key", "listen", listen)
	}
	return nil
}

// config returns the server's AuthConfig, nil when authentication is off.
func (a *authFlags) config() (*server.AuthConfig, error) {
	if !a.enabled() {
		return nil, nil
	}
	cfg := &server.AuthConfig{TokenCacheTTL: offWhenZero(a.tokenCacheTTL)}
	if a.clientCA != "" {
		a.clientCAs = &clientCAs{}
		cfg.TrustsClientCA = a.clientCAs.trusts
	}
	if a.certScopes != "" {
		var err error
		if cfg.CertScopes, err = readCertScopes(a.certScopes); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// transportCredentials returns the server's TLS credentials, nil without --tls-cert. With
// --client-ca a client certificate is verified if given (a caller may use a token instead).
// The files are read again when they change (see tlsfiles): a renewed certificate or CA
// bundle is used from the next handshake on, without a restart.
func (a *authFlags) transportCredentials(log *slog.Logger) (credentials.TransportCredentials, error) {
	if a.tlsCert == "" {
		return nil, nil
	}
	r, err := tlsfiles.NewReloader([]string{a.tlsCert, a.tlsKey, a.clientCA}, a.serverTLSConfig,
		func(err error) {
			log.Error("the TLS files changed but do not load; still serving the previous ones", "err", err)
		},
		func(cfg *tls.Config) {
			log.Info("reloaded the TLS files", certificateAttrs(cfg)...)
		})
	if err != nil {
		return nil, err
	}
	if a.clientCAs != nil {
		a.clientCAs.reload = func() { r.Config() }
	}
	return r.Credentials(), nil
}

// serverTLSConfig builds the server's configuration from the contents of --tls-cert,
// --tls-key and --client-ca (empty without it).
func (a *authFlags) serverTLSConfig(contents [][]byte) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(contents[0], contents[1])
	if err != nil {
		return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if a.clientCA != "" {
		pool, anchors, err := parseClientCAs(contents[2])
		if err != nil {
			return nil, fmt.Errorf("--client-ca %s: %w", a.clientCA, err)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if a.clientCAs != nil {
			// This configuration is the one in use from now on: build's success makes it so.
			a.clientCAs.anchors.Store(&anchors)
		}
	}
	return cfg, nil
}

// parseClientCAs reads the certificates of a --client-ca file into a pool, and the set of
// their DER encodings. Blocks other than certificates are skipped, as
// x509.CertPool.AppendCertsFromPEM skips them.
func parseClientCAs(pemData []byte) (*x509.CertPool, map[string]bool, error) {
	pool, anchors := x509.NewCertPool(), map[string]bool{}
	for rest := pemData; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, err
		}
		pool.AddCert(cert)
		anchors[string(cert.Raw)] = true
	}
	if len(anchors) == 0 {
		return nil, nil, errors.New("holds no PEM certificate")
	}
	return pool, anchors, nil
}

// certificateAttrs are log attributes naming the certificate cfg presents.
func certificateAttrs(cfg *tls.Config) []any {
	if len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return nil
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		return nil
	}
	return []any{"subject", leaf.Subject.String(), "serial", fmt.Sprintf("%X", leaf.SerialNumber), "not_after", leaf.NotAfter.UTC().Format(time.RFC3339)}
}

// spacedRDNs reports whether subject has an unescaped comma followed by white space, as
// OpenSSL and LDAP tools often write subjects; Go's pkix.Name.String never does.
func spacedRDNs(subject string) bool {
	for _, rdn := range splitUnescaped(subject, ',')[1:] {
		if strings.HasPrefix(rdn, " ") || strings.HasPrefix(rdn, "\t") {
			return true
		}
	}
	return false
}

// goSubjectForm returns subject as Go's pkix.Name.String writes a certificate subject holding
// the same attributes, when subject names only the attribute types Go writes by name (C, ST,
// L, STREET, POSTALCODE, O, OU, CN, SERIALNUMBER; ok false otherwise, or when it does not
// parse). Go writes them in that order reversed, the values of one type together in one RDN
// ("O=a+O=b"), whatever order the certificate holds them in.
func goSubjectForm(subject string) (canonical string, ok bool) {
	var name pkix.Name
	lists := map[string]*[]string{
		"C": &name.Country, "ST": &name.Province, "L": &name.Locality, "STREET": &name.StreetAddress,
		"POSTALCODE": &name.PostalCode, "O": &name.Organization, "OU": &name.OrganizationalUnit,
	}
	// Go keeps one CN and one serialNumber (certificates naming either twice are refused).
	single := map[string]*string{"CN": &name.CommonName, "SERIALNUMBER": &name.SerialNumber}
	for _, rdn := range splitUnescaped(subject, ',') {
		for _, atv := range splitUnescaped(rdn, '+') {
			typ, escaped, found := strings.Cut(atv, "=")
			value, unescaped := unescapeDNValue(escaped)
			if !found || !unescaped {
				return "", false
			}
			if list, ok := lists[typ]; ok {
				*list = append(*list, value)
			} else if one, ok := single[typ]; ok && *one == "" {
				*one = value
			} else {
				return "", false
			}
		}
	}
	return name.String(), true
}

// splitUnescaped splits s at each sep not escaped by a backslash.
func splitUnescaped(s string, sep byte) []string {
	var parts []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case sep:
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// unescapeDNValue undoes the backslash escapes Go writes in a subject's values.
func unescapeDNValue(s string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			if i+1 == len(s) {
				return "", false
			}
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// readCertScopes reads the subject-to-scopes file: "SCOPE[,SCOPE...] SUBJECT" per line, the
// subject as Go's x509 prints it (RFC 2253 order, e.g. "CN=edge-1,O=Acme"); blank lines and
// lines starting with # are skipped.
func readCertScopes(path string) (map[string][]server.Scope, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--cert-scopes: %w", err)
	}
	defer f.Close()
	out := map[string][]server.Scope{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := trimCertScopesLine(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		scopes, subject, ok := strings.Cut(line, " ")
		// A subject as Go prints it starts with an attribute type, never with white space of
		// any kind: after the space that ends the scopes, a form feed or a no-break space is
		// part of the separator too.
		subject = strings.TrimLeftFunc(subject, unicode.IsSpace)
		if !ok || subject == "" {
			return nil, fmt.Errorf("--cert-scopes %s:%d: want SCOPE[,SCOPE...] SUBJECT", path, n)
		}
		if spacedRDNs(subject) {
			// Go prints "CN=x,O=y": a subject written "CN=x, O=y" would never match anyone.
			return nil, fmt.Errorf("--cert-scopes %s:%d: subject %q has a space after a comma; write it as Go prints subjects, without (e.g. CN=edge-1,O=Acme)", path, n, subject)
		}
		if canonical, ok := goSubjectForm(subject); ok && canonical != subject {
			// Go writes a subject's attributes in one order, each kind in one RDN: written in
			// another (O=Acme,CN=edge-1, as some tools print it), it would never match anyone.
			return nil, fmt.Errorf("--cert-scopes %s:%d: subject %q is not as Go prints subjects, so no certificate would match it; a certificate with these attributes is %q", path, n, subject, canonical)
		}
		parsed, err := server.ParseScopes(strings.Split(scopes, ","))
		if err != nil {
			return nil, fmt.Errorf("--cert-scopes %s:%d: %w", path, n, err)
		}
		out[subject] = append(out[subject], parsed...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--cert-scopes: %w", err)
	}
	return out, nil
}

// trimCertScopesLine takes off a --cert-scopes line what cannot be part of it: white space
// before it, and after it a CR (a file with CRLF line ends), then the spaces that no escape
// keeps. A subject as Go prints it never starts with white space (it starts
// with an attribute type), and ends with a space only escaped ("CN=edge\ "); but it can end
// with a tab, a no-break space or another Unicode space, which Go does not escape. Trimmed as
// strings.TrimSpace trims, such a line named another subject than the one written
// ("CN=edge\" for "CN=edge\ ", "CN=edge" for "CN=edge" and a no-break space): the certificate
// it was written for got no scope, and one with the shorter subject got them.
func trimCertScopesLine(line string) string {
	line = strings.TrimLeftFunc(line, unicode.IsSpace)
	line = strings.TrimSuffix(line, "\r")
	for strings.HasSuffix(line, " ") {
		escapes := len(line) - 1 - len(strings.TrimRight(line[:len(line)-1], "\\"))
		if escapes%2 == 1 {
			break // an escaped space: part of the last value
		}
		line = line[:len(line)-1]
	}
	return line
}

// prepareTokens stores the bootstrap admin token if one is given and no admin token was ever
// stored, and warns when authentication is on but no live admin token exists: then only a
// client certificate mapped to admin, or a restart with the bootstrap variable, can manage the
// server.
func prepareTokens(ctx context.Context, log *slog.Logger, st storage.TokenStore, sc serveConfig) error {
	if sc.bootstrapToken != "" {
		created, err := server.EnsureBootstrapToken(ctx, st, sc.bootstrapToken, time.Now)
		if err != nil {
			return fmt.Errorf("$%s: %w", bootstrapTokenEnv, err)
		}
		if created {
			log.Warn("stored the bootstrap admin token from $"+bootstrapTokenEnv+"; create named tokens with 'hookverify token create', then revoke it and unset the variable", "name", server.BootstrapTokenName)
		}
	}
	if !sc.auth.enabled() {
		return nil
	}
	list, err := st.ListTokens(ctx)
	if err != nil {
		return err
	}
	everAdmin := false
	for _, t := range list {
		if slices.Contains(t.Scopes, server.ScopeAdmin) {
			if t.RevokedAt.IsZero() {
				return nil
			}
			everAdmin = true
		}
	}
	if everAdmin {
		// EnsureBootstrapToken stores nothing once an admin token was ever stored, so that a
		// revoked bootstrap token stays revoked: the variable cannot help here.
		log.Warn("authentication is on and every admin token is revoked; $" + bootstrapTokenEnv + " creates one only on a store that never held one: manage the server with a client certificate mapped to admin (--cert-scopes)")
		return nil
	}
	log.Warn("authentication is on and no live admin token exists; set $" + bootstrapTokenEnv + " (at least 32 characters) to create one, unless a client certificate maps to admin")
	return nil
}
