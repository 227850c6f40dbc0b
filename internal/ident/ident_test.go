package ident

import (
	"regexp"
	"strings"
	"testing"
)

// idOracle is the rule Valid implements, written as the regular expression it replaced.
var idOracle = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// FuzzValidID checks Valid against the regular expression on arbitrary input: endpoint ids
// come from every Verify call.
func FuzzValidID(f *testing.F) {
	for _, seed := range []string{"", "a", "github-prod", "A.b_c-9", "a b", "a/b", "é", "a\x00", "\xff",
		strings.Repeat("x", 128), strings.Repeat("x", 129)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Valid(s), idOracle.MatchString(s); got != want {
			t.Fatalf("Valid(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
