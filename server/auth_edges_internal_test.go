package server

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestRefusalLogBoundsDistinctReasons: reasons that name a revoked token or a certificate
// subject vary without bound; past maxRefusalReasons they share one limiter, so a caller
// cycling through revoked tokens gets about maxRefusalReasons lines per interval logged, not
// one line per token.
func TestRefusalLogBoundsDistinctReasons(t *testing.T) {
	r := &refusalLog{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	logged := 0
	for i := range 3 * maxRefusalReasons {
		if ok, _ := r.allow(fmt.Sprintf("revoked API token tok_%016x", i)); ok {
			logged++
		}
	}
	if logged > maxRefusalReasons+1 {
		t.Errorf("%d of %d refusals with distinct reasons logged, want at most %d", logged, 3*maxRefusalReasons, maxRefusalReasons+1)
	}
	if len(r.byReason) > maxRefusalReasons+1 {
		t.Errorf("%d limiters kept, want at most %d", len(r.byReason), maxRefusalReasons+1)
	}
}

// TestAnyGoodChainAuthenticatesWhateverItsPlace: a client certificate verified through several
// chains (a cross-signed intermediate) authenticates while one chain is both within its
// validity period and anchored by a trusted CA, wherever that chain comes in the verified
// chains: an expired or untrusted chain before it does not decide.
func TestAnyGoodChainAuthenticatesWhateverItsPlace(t *testing.T) {
	now := time.Now()
	cert := func(cn string, notBefore, notAfter time.Time) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, NotBefore: notBefore, NotAfter: notAfter}
	}
	leaf := cert("edge-acme", now.Add(-time.Hour), now.Add(time.Hour))
	inter := cert("acme intermediate", now.Add(-time.Hour), now.Add(time.Hour))
	expiredCross := cert("acme intermediate", now.Add(-2*time.Hour), now.Add(-time.Hour))
	oldRoot, newRoot := cert("old root", now.Add(-time.Hour), now.Add(time.Hour)), cert("new root", now.Add(-time.Hour), now.Add(time.Hour))
	s := &Server{auth: &authenticator{trustsClientCA: func(anchor *x509.Certificate) bool { return anchor != oldRoot }}}

	for _, c := range []struct {
		name   string
		chains [][]*x509.Certificate
		ok     bool
	}{
		{"an expired chain, then a good one", [][]*x509.Certificate{{leaf, expiredCross, newRoot}, {leaf, inter, newRoot}}, true},
		{"an untrusted chain, then a good one", [][]*x509.Certificate{{leaf, inter, oldRoot}, {leaf, inter, newRoot}}, true},
		{"an expired chain only", [][]*x509.Certificate{{leaf, expiredCross, newRoot}}, false},
		{"an untrusted chain only", [][]*x509.Certificate{{leaf, inter, oldRoot}}, false},
	} {
		if err := s.usableChain(c.chains, now); (err == nil) != c.ok {
			t.Errorf("%s: usableChain = %v, want ok %v", c.name, err, c.ok)
		}
	}
}
