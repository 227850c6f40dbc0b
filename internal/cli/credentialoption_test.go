package cli

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestCredentialOptionFromStandardInput: Meta's verify_token is a credential (README,
// Security: stored and shown only as a salted digest), but `endpoint create|update --option
// verify_token=...` was the only way to give it, which puts it in the process list, where
// any local user reads it, and in the shell's history. --option-stdin KEY reads that option's
// value from standard input, trimmed as a secret is; the option then works as if given with
// --option, and neither the answer nor the audit trail holds it. Given on the command line
// instead, it still works, with a warning saying how to keep it out of sight.
func TestCredentialOptionFromStandardInput(t *testing.T) {
	const token = "vt-8c1f0e9a5b7d4c2e"
	_, must := startTestServer(t)
	out := must(token+"\n", "endpoint", "create", "--id", "m", "--provider", "meta", "--option-stdin", "verify_token")
	if strings.Contains(out, token) || !strings.Contains(out, "sha256-salted:") {
		t.Fatalf("endpoint create answered %s; want the verify_token as a digest", out)
	}
	must("app-secret", "secret", "add", "--endpoint", "m")
	// The answer carries the echoed challenge as its body, base64 in JSON.
	echoed := base64.StdEncoding.EncodeToString([]byte("ch4ll3nge"))
	handshake := func(presented string) string {
		return must("", "verify", "--endpoint", "m", "--method", "GET", "--body", "-",
			"--url", "https://hooks.example.com/m?hub.mode=subscribe&hub.challenge=ch4ll3nge&hub.verify_token="+presented)
	}
	if got := handshake(token); !strings.Contains(got, echoed) {
		t.Fatalf("subscription GET with the token read from standard input: %s; want the challenge echoed", got)
	}
	if got := handshake("wrong"); strings.Contains(got, echoed) {
		t.Fatalf("subscription GET with another token: %s; want it refused", got)
	}

	// Update replaces it the same way.
	const next = "vt-2d9e7f3a1c6b8e0f"
	if out := must(next, "endpoint", "update", "--id", "m", "--option-stdin", "verify_token"); strings.Contains(out, next) {
		t.Fatalf("endpoint update answered %s; want no token in it", out)
	}
	if got := handshake(next); !strings.Contains(got, echoed) {
		t.Fatalf("subscription GET with the updated token: %s; want the challenge echoed", got)
	}
	if audit := must("", "audit", "--endpoint", "m", "--all"); strings.Contains(audit, token) || strings.Contains(audit, next) {
		t.Fatalf("audit trail holds a verify_token: %s", audit)
	}

	// The command line still works, with a warning naming the way out of sight.
	remote, _ := startTestServer(t)
	code, _, errOut := run(t, "", append([]string{"endpoint", "create", "--id", "m2", "--provider", "meta", "--option", "verify_token=" + token}, remote...)...)
	if code != 0 || !strings.Contains(errOut, "--option-stdin verify_token") || strings.Contains(errOut, token) {
		t.Errorf("endpoint create --option verify_token=...: exit %d, stderr %q; want 0 and a warning naming --option-stdin", code, errOut)
	}

	// Standard input without one value: refused (exit 1, as for a secret), not quoted.
	for _, stdin := range []string{"", token + "\n" + token + "\n"} {
		code, out, errOut := run(t, stdin, append([]string{"endpoint", "create", "--id", "m3", "--provider", "meta", "--option-stdin", "verify_token"}, remote...)...)
		if code != 1 || out != "" || !strings.Contains(errOut, "--option-stdin verify_token") || strings.Contains(errOut, token) {
			t.Errorf("standard input %q: exit %d, stdout %q, stderr %q; want 1 naming --option-stdin", stdin, code, out, errOut)
		}
	}

	// Usage errors: a key given twice, two options from one standard input, a value given to it.
	for _, c := range []struct {
		stdin string
		args  []string
	}{
		{token, []string{"endpoint", "create", "--id", "m3", "--provider", "meta", "--option-stdin", "verify_token", "--option", "verify_token=x"}},
		{token, []string{"endpoint", "create", "--id", "m3", "--provider", "meta", "--option-stdin", "verify_token", "--option-stdin", "other"}},
		{token, []string{"endpoint", "create", "--id", "m3", "--provider", "meta", "--option-stdin", "a=b"}},
	} {
		code, out, errOut := run(t, c.stdin, append(c.args, remote...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, "--option-stdin") || strings.Contains(errOut, token) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 naming --option-stdin", c.args, code, out, errOut)
		}
	}
}
