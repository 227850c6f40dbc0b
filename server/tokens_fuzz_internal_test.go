package server

import (
	"strings"
	"testing"
)

// FuzzCheckBootstrapToken: $HOOKVERIFY_BOOTSTRAP_TOKEN is the first admin credential, read from
// the environment. Properties: an accepted token is at least minBootstrapLen bytes of printable
// ASCII without spaces (what every client can send, client.checkToken), and a caller presenting
// it as "Bearer <token>" presents exactly it; a refusal never quotes it.
func FuzzCheckBootstrapToken(f *testing.F) {
	for _, s := range []string{strings.Repeat("a", 32), strings.Repeat("a", 31), "  " + strings.Repeat("b", 40), strings.Repeat("c", 40) + "\t",
		strings.Repeat("d", 20) + " " + strings.Repeat("e", 20), strings.Repeat("é", 20), "Bearer " + strings.Repeat("f", 40)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		err := CheckBootstrapToken(token)
		if err != nil {
			if len(token) >= 8 && strings.Contains(err.Error(), token) {
				t.Fatalf("CheckBootstrapToken's error quotes the token: %v", err)
			}
			return
		}
		if len(token) < minBootstrapLen || strings.IndexFunc(token, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
			t.Fatalf("CheckBootstrapToken accepted %q", token)
		}
		if got, err := bearerToken([]string{"Bearer " + token}); err != nil || got != token {
			t.Fatalf("bootstrap token %q presented as a bearer token reads as %q, %v", token, got, err)
		}
	})
}
