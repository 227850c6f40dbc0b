package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzCertScopesNameTheirCertificate: the server gives a client certificate the scopes that the
// --cert-scopes file maps to its subject as Go prints it (x509.Certificate.Subject.String(),
// which is also the "cert:..." principal the logs and the audit trail show). FuzzReadCertScopes
// holds the file's parser to its own output; this holds it to the certificates: for any subject
// a CA may sign (as a CSR asks), the line "SCOPE <the subject as Go prints it>" maps exactly
// that text, or is refused; it is never read as another subject, which no certificate would
// match (the operator would see the file taken and the certificate without its scopes), nor is
// a subject a line can carry refused.
func FuzzCertScopesNameTheirCertificate(f *testing.F) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	cn, o, ou := asn1.ObjectIdentifier{2, 5, 4, 3}, asn1.ObjectIdentifier{2, 5, 4, 10}, asn1.ObjectIdentifier{2, 5, 4, 11}
	for _, subject := range []pkix.RDNSequence{
		{{{Type: cn, Value: "edge-1"}}, {{Type: o, Value: "Acme"}}},
		{{{Type: o, Value: "Acme, Inc."}}, {{Type: cn, Value: " edge "}}},
		{{{Type: ou, Value: "a"}, {Type: ou, Value: "b+c"}}, {{Type: cn, Value: "#x\\y"}}},
		// Found by this target: the file's lines were trimmed of Unicode white space, so these
		// subjects, as Go prints them, were read as others ("CN=edge\" for "CN=edge\ ").
		{{{Type: cn, Value: "edge "}}},
		{{{Type: cn, Value: "edge\u00a0"}}},
		{{{Type: cn, Value: "a\tb\t"}}},
		{{{Type: asn1.ObjectIdentifier{0, 9, 2342, 19200300, 100, 1, 25}, Value: "com"}}, {{Type: cn, Value: "x"}}},
	} {
		raw, err := asn1.Marshal(subject)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, rawSubject []byte) {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), RawSubject: rawSubject,
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
		if err != nil {
			return
		}
		leaf, err := x509.ParseCertificate(der)
		if err != nil {
			return
		}
		cns, serials := 0, 0
		for _, atv := range leaf.Subject.Names {
			switch {
			case atv.Type.Equal(cn):
				cns++
			case atv.Type.Equal(asn1.ObjectIdentifier{2, 5, 4, 5}):
				serials++
			}
		}
		if cns > 1 || serials > 1 {
			return // the server refuses such a certificate (FuzzClientCertSubject)
		}
		subject := leaf.Subject.String()
		if subject == "" || strings.ContainsAny(subject, "\r\n") {
			return // no line can name it
		}
		path := filepath.Join(dir, "scopes")
		if err := os.WriteFile(path, []byte("admin "+subject+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := readCertScopes(path)
		if err != nil {
			t.Fatalf("the subject %q, as Go prints a certificate's, refused: %v", subject, err)
		}
		if len(m) != 1 || len(m[subject]) != 1 {
			keys := make([]string, 0, len(m))
			for k := range m {
				keys = append(keys, k)
			}
			t.Fatalf("the line for subject %q maps %q: a certificate with this subject gets no scope", subject, keys)
		}
	})
}
