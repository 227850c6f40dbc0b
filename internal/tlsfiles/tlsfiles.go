// Package tlsfiles builds TLS configurations from PEM files and builds them again when the
// files change, so that a certificate renewed on disk (by certbot, cert-manager, a Vault agent
// or an operator's cp) takes effect at the next handshake, without a restart. Certificates
// are short-lived nowadays: a process that read its files once, at start, went on presenting
// the old certificate after the renewal and failed every handshake once it expired.
package tlsfiles

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

// Reloader holds the configuration built from a set of files, and builds it again at the first
// use after any of them changed. A change that does not build (a certificate copied before its
// key, a file half written) leaves the last good configuration in use: a renewal in progress
// must not take down a working one. It is built again at the next change.
type Reloader struct {
	paths   []string
	build   func(contents [][]byte) (*tls.Config, error)
	onError func(error)
	onBuilt func(*tls.Config)

	mu sync.Mutex
	// seen is the files' contents at the last build attempt, good or not (nil for a file that
	// could not be read).
	seen    [][]byte
	current *tls.Config
	// creds is current wrapped for gRPC, made once per build.
	creds credentials.TransportCredentials
	// expires is when the first certificate chain of current stops being valid (zero without
	// one), and margin how long before that a client connection presenting it is closed (see
	// ClientHandshake).
	expires time.Time
	margin  time.Duration
	// failed is the error of the last build attempt, nil when it succeeded.
	failed error
}

// NewReloader builds the configuration now and returns an error if it does not build: a
// process must not start on broken files. build gets the contents of paths, in their order
// (nil for an empty name).
// onError, if set, is called once for each change that fails to build; onBuilt, if set, after
// each successful build after the first.
func NewReloader(paths []string, build func(contents [][]byte) (*tls.Config, error), onError func(error), onBuilt func(*tls.Config)) (*Reloader, error) {
	r := &Reloader{paths: paths, build: build, onError: onError, onBuilt: onBuilt}
	contents, err := r.read()
	if err != nil {
		return nil, fmt.Errorf("reading TLS files: %w", err)
	}
	cfg, err := build(contents)
	if err != nil {
		return nil, err
	}
	r.expires, r.margin = chainExpiry(cfg)
	r.seen, r.current, r.creds = contents, cfg, credentials.NewTLS(cfg)
	return r, nil
}

// read returns the contents of every file; a file that cannot be read (being replaced, say)
// is nil, and its error returned. An empty name (a file not configured) is nil too.
func (r *Reloader) read() ([][]byte, error) {
	contents := make([][]byte, len(r.paths))
	var errs []error
	for i, p := range r.paths {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		contents[i] = b
	}
	return contents, errors.Join(errs...)
}

// refresh builds the configuration again if the files' contents changed since the last
// attempt. Contents, not modification times: a file rewritten within the file system's clock
// tick, or swapped for one of the same size and time, is still a change. Reading a few small
// files costs little beside a handshake.
func (r *Reloader) refresh() {
	r.mu.Lock()
	defer r.mu.Unlock()
	contents, err := r.read()
	if slices.EqualFunc(contents, r.seen, bytes.Equal) && err == nil {
		return
	}
	if err == nil {
		var cfg *tls.Config
		if cfg, err = r.build(contents); err == nil {
			r.expires, r.margin = chainExpiry(cfg)
			r.seen, r.current, r.creds, r.failed = contents, cfg, credentials.NewTLS(cfg), nil
			if r.onBuilt != nil {
				r.onBuilt(cfg)
			}
			return
		}
	}
	if r.failed != nil && slices.EqualFunc(contents, r.seen, bytes.Equal) {
		return // the same broken files as last time: reported already
	}
	r.seen, r.failed = contents, err
	if r.onError != nil {
		r.onError(err)
	}
}

// Config returns the configuration built from the files as they are now, or the last one
// that built.
func (r *Reloader) Config() *tls.Config {
	r.refresh()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

// LastError returns the error of the last build attempt, nil if it succeeded.
func (r *Reloader) LastError() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

// GetCertificate serves as tls.Config.GetCertificate for a server with one certificate.
func (r *Reloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	cfg := r.Config()
	if len(cfg.Certificates) == 0 {
		return nil, errors.New("tlsfiles: no certificate configured")
	}
	return &cfg.Certificates[0], nil
}

// Credentials returns gRPC transport credentials that use the configuration current at each
// handshake. A failed client handshake made after a reload failed says so, since the old
// certificate or CAs in use are then the likely cause.
func (r *Reloader) Credentials() credentials.TransportCredentials {
	return &reloadingCredentials{r: r}
}

// reloadingCredentials hands each handshake to the credentials of the current configuration.
type reloadingCredentials struct {
	r *Reloader
	// serverName, when set through OverrideServerName, applies to every configuration.
	serverName string
}

// currentCredentials returns the credentials of the current configuration, how long a client
// connection made with them may stay open (0: no limit), and the error of the last build
// attempt if it failed.
func (c *reloadingCredentials) currentCredentials() (credentials.TransportCredentials, time.Duration, error) {
	c.r.refresh()
	c.r.mu.Lock()
	creds, failed := c.r.creds, c.r.failed
	var open time.Duration
	if !c.r.expires.IsZero() {
		// Closed a margin early, so that calls near the expiry, or a server clock a little
		// ahead, do not meet the expired certificate when a renewed one is on disk. A connection
		// made within the margin (the files not renewed yet) lasts until the expiry itself,
		// so that it is not made again and again; one made after (still not renewed) is
		// refused by the server, or not asked for the certificate, and left alone.
		if open = time.Until(c.r.expires); open > c.r.margin {
			open -= c.r.margin
		} else if open <= 0 {
			open = 0
		}
	}
	c.r.mu.Unlock()
	if c.serverName != "" {
		creds = creds.Clone()
		//lint:ignore SA1019 kept working for callers of the deprecated method
		_ = creds.OverrideServerName(c.serverName) // TLS credentials never fail it
	}
	return creds, open, failed
}

// ClientHandshake also closes the connection when the client certificate it presented
// expires. A connection keeps the certificate of its handshake, and a server that checks it
// on every call, as hookverify does, refuses every call from then on; gRPC keeps such a
// connection open (it works at its level), so a certificate renewed on disk in time was never
// used and the caller failed until restarted. Closed, the connection is made again at the
// next call, with the files as they are then.
func (c *reloadingCredentials) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	creds, open, failed := c.currentCredentials()
	out, info, err := creds.ClientHandshake(ctx, authority, conn)
	if err != nil {
		if failed != nil {
			err = fmt.Errorf("%w (the TLS files changed but do not load, so the previous ones are in use: %v)", err, failed)
		}
		return out, info, err
	}
	if open > 0 {
		out = closeAfter(out, open)
	}
	return out, info, err
}

func (c *reloadingCredentials) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	creds, _, _ := c.currentCredentials()
	return creds.ServerHandshake(conn)
}

// chainExpiry returns when the first certificate chain of cfg, the one a client presents,
// stops being valid: the earliest expiry of its certificates (leaf and intermediates), zero
// when cfg has none or it does not parse. margin is a tenth of that certificate's lifetime,
// at most a minute.
func chainExpiry(cfg *tls.Config) (expires time.Time, margin time.Duration) {
	if len(cfg.Certificates) == 0 {
		return time.Time{}, 0
	}
	var earliest *x509.Certificate
	for _, der := range cfg.Certificates[0].Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return time.Time{}, 0
		}
		if earliest == nil || c.NotAfter.Before(earliest.NotAfter) {
			earliest = c
		}
	}
	if earliest == nil {
		return time.Time{}, 0
	}
	return earliest.NotAfter, min(time.Minute, earliest.NotAfter.Sub(earliest.NotBefore)/10)
}

// expiringConn is a connection closed by a timer, which its own Close stops, so that closed
// connections do not hold a timer each until their certificate's expiry.
type expiringConn struct {
	net.Conn
	timer *time.Timer
}

// closeAfter closes conn after d.
func closeAfter(conn net.Conn, d time.Duration) net.Conn {
	return &expiringConn{Conn: conn, timer: time.AfterFunc(d, func() { conn.Close() })}
}

func (c *expiringConn) Close() error {
	c.timer.Stop()
	return c.Conn.Close()
}

func (c *reloadingCredentials) Info() credentials.ProtocolInfo {
	c.r.mu.Lock()
	defer c.r.mu.Unlock()
	return c.r.creds.Info()
}

func (c *reloadingCredentials) Clone() credentials.TransportCredentials {
	clone := *c
	return &clone
}

func (c *reloadingCredentials) OverrideServerName(name string) error {
	c.serverName = name
	return nil
}
