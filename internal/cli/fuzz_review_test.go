package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/server"
)

// FuzzReadCertScopes: the --cert-scopes file decides which client certificates may do what.
// Any content either is refused or maps non-empty subjects, as written and without surrounding
// space, to scopes that print back to text ParseScope reads again to the same scope.
func FuzzReadCertScopes(f *testing.F) {
	f.Add("# edges\nverify:shop-* CN=edge-1,O=Acme\n\nadmin CN=ops\n")
	f.Add("verify:a,inbox:b   CN=x, O=y \r\n")
	f.Add("admin\nverify:* \t\n")
	f.Add("verify:a CN=dup\nadmin CN=dup\n")
	f.Add(strings.Repeat("a", 70000))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string) {
		path := filepath.Join(dir, "scopes")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := readCertScopes(path)
		if err != nil {
			return
		}
		for subject, scopes := range m {
			if subject == "" || subject != strings.TrimSpace(subject) || strings.ContainsAny(subject, "\n") {
				t.Fatalf("subject %q", subject)
			}
			for _, s := range scopes {
				again, err := server.ParseScope(s.String())
				if err != nil || again != s {
					t.Fatalf("scope %v prints as %q, which reads back as %v, %v", s, s.String(), again, err)
				}
			}
		}
	})
}

// TestCertScopesRefuseSpacedSubjects: Go prints a subject "CN=x,O=y", so a line written the
// way OpenSSL prints it, "CN=x, O=y", would map a subject no certificate ever has: refused at
// start, with the form to use. An escaped comma followed by a space is part of a value.
func TestCertScopesRefuseSpacedSubjects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "scopes")
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("verify:a CN=edge-1, O=Acme\n")
	if _, err := readCertScopes(path); err == nil || !strings.Contains(err.Error(), "space after a comma") {
		t.Fatalf("a spaced subject: %v, want refused", err)
	}
	write("verify:a CN=edge-1,O=Acme\\, Inc.\n")
	m, err := readCertScopes(path)
	if err != nil || len(m[`CN=edge-1,O=Acme\, Inc.`]) != 1 {
		t.Fatalf("an escaped comma and a space in a value: %v, %v; want it mapped", m, err)
	}
}
