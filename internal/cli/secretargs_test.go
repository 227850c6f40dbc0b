package cli

import (
	"strings"
	"testing"
)

// TestSecretTypedAsAnUnknownFlagIsNotRepeated: a secret that begins with "-" (a URL-safe
// base64 one, as Python's secrets.token_urlsafe makes, does 1 time in 64), typed where
// standard input was meant, reads to the flag package as an unknown flag, which it repeats
// ("flag provided but not defined: -..."): into the terminal's scrollback or a CI log. The
// commands that read a secret refuse it as a usage error without repeating it, as they refuse
// a stray argument; other commands still name their unknown flag.
func TestSecretTypedAsAnUnknownFlagIsNotRepeated(t *testing.T) {
	const secret = "-Xk9_c2VjcmV0LXR5cGVkLW9uLXRoZS1jb21tYW5kLWxpbmU"
	for _, args := range [][]string{
		{"secret", "add", "--endpoint", "e", secret},
		{"secret", "rotate", "--endpoint", "e", secret},
		{"secret", "fingerprint", "--endpoint", "e", secret},
		{"secret", "add", "--endpoint", "e", secret + "=tail"},
		{"token", "revoke", "--id", "-", "-" + "hvt_FXpSCpQQ0whhOE__ml5V90Lmvm0zAv_xyS4Ta8Nkmkc"},
	} {
		code, out, errOut := run(t, "", args...)
		typed := strings.TrimLeft(args[len(args)-1], "-")
		typed, _, _ = strings.Cut(typed, "=")
		if code != 2 || strings.Contains(out+errOut, typed) || !strings.Contains(errOut, "standard input") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2, the argument not shown, and where the secret goes", args, code, out, errOut)
		}
	}
	// A flag misspelled is still a usage error, named (a short run of lowercase letters is no
	// secret), and the flags are listed to find the right one; on endpoint create and update
	// (which read a credential option from standard input) too.
	for _, args := range [][]string{{"secret", "add", "--endpiont", "e"}, {"endpoint", "update", "--id", "e", "--provider", "x"}} {
		misspelt := args[len(args)-2]
		if code, _, errOut := run(t, "", args...); code != 2 || !strings.Contains(errOut, "unknown flag "+misspelt[1:]) || !strings.Contains(errOut, "-id string") && !strings.Contains(errOut, "-endpoint string") {
			t.Errorf("%q: exit %d, stderr %q; want 2, the flag named and the flags listed", args, code, errOut)
		}
	}
	// A stray argument after --option KEY (the value typed apart) is not repeated.
	const token = "EAAGm0PX4ZCpsBAKZCZCl2OeS0"
	if code, _, errOut := run(t, "", "endpoint", "create", "--id", "m", "--provider", "meta", "--option", "verify_token", token); code != 2 || strings.Contains(errOut, token) {
		t.Errorf("endpoint create with a stray value: exit %d, stderr %q; want 2, not repeated", code, errOut)
	}
	if code, _, errOut := run(t, "", "endpoint", "list", "--bogus"); code != 2 || !strings.Contains(errOut, "bogus") {
		t.Errorf("endpoint list --bogus: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
}
