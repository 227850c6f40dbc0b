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
