// Package testpki issues certificates for tests: a CA, server and client certificates signed
// by it, and their PEM files; and keyrings under fresh master keys. It is for tests only.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookverify/hookverify/server/secretbox"
)

// CA signs certificates.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
}

// NewCA returns a self-signed CA named name, valid for a day either side of now.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-24 * time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der := create(t, tmpl, tmpl, key, key)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, Key: key}
}

// Leaf describes a certificate to issue.
type Leaf struct {
	Subject pkix.Name
	// Server makes it a server certificate, for IPs and DNSNames, or when both are empty for
	// 127.0.0.1 and localhost; otherwise it is a client certificate.
	Server   bool
	IPs      []net.IP
	DNSNames []string
	// NotBefore and NotAfter default to an hour either side of now.
	NotBefore, NotAfter time.Time
}

// Issue signs a certificate as leaf describes, with a new key.
func (ca *CA) Issue(t testing.TB, leaf Leaf) tls.Certificate {
	t.Helper()
	if leaf.NotBefore.IsZero() {
		leaf.NotBefore = time.Now().Add(-time.Hour)
	}
	if leaf.NotAfter.IsZero() {
		leaf.NotAfter = time.Now().Add(time.Hour)
	}
	tmpl := &x509.Certificate{Subject: leaf.Subject, NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if leaf.Server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses, tmpl.DNSNames = leaf.IPs, leaf.DNSNames
		if len(leaf.IPs) == 0 && len(leaf.DNSNames) == 0 {
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
			tmpl.DNSNames = []string{"localhost"}
		}
	}
	key := newKey(t)
	der := create(t, tmpl, ca.Cert, key, ca.Key)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// WriteCA writes the CA's certificate to path in PEM.
func (ca *CA) WriteCA(t testing.TB, path string) {
	t.Helper()
	writePEM(t, path, "CERTIFICATE", ca.Cert.Raw)
}

// WriteKeyPair writes cert's certificate and key as PEM files dir/name.pem and dir/name.key
// and returns their paths.
func WriteKeyPair(t testing.TB, dir, name string, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	WriteCertificate(t, certFile, cert)
	WriteKey(t, keyFile, cert)
	return certFile, keyFile
}

// WriteCertificate writes cert's certificate (its chain) to path in PEM.
func WriteCertificate(t testing.TB, path string, cert tls.Certificate) {
	t.Helper()
	var out []byte
	for _, der := range cert.Certificate {
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}

// WriteKey writes cert's private key to path in PKCS #8 PEM.
func WriteKey(t testing.TB, path string, cert tls.Certificate) {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, path, "PRIVATE KEY", der)
}

// Serial returns the serial number of cert's leaf.
func Serial(t testing.TB, cert tls.Certificate) *big.Int {
	t.Helper()
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return leaf.SerialNumber
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// create signs tmpl with a random serial number.
func create(t testing.TB, tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) []byte {
	t.Helper()
	tmpl.SerialNumber, _ = rand.Int(rand.Reader, big.NewInt(1<<62))
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Pool returns a pool holding the CA's certificate.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Keyring returns a keyring under a fresh master key.
func Keyring(t testing.TB) *secretbox.Keyring {
	t.Helper()
	key, err := secretbox.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	keyring, err := secretbox.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	return keyring
}
