package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyTakesSignOutputAsHeaders: the README's quick start passes `sign`'s output to
// `verify -H "$(hookverify sign ...)"`. For a provider whose delivery has several headers
// (GitHub: X-GitHub-Delivery and two signatures) that one -H held every line, and verify sent
// it as one header, X-GitHub-Delivery, whose value held the other lines and a newline, which
// no HTTP request can carry: the delivery was rejected MISSING_SIGNATURE although sign and
// verify were given the same secret. Each line of an -H value is a header of its own.
func TestVerifyTakesSignOutputAsHeaders(t *testing.T) {
	_, must := startTestServer(t)
	must("", "endpoint", "create", "--id", "gh", "--provider", "github")
	must("gh-secret", "secret", "add", "--endpoint", "gh")
	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"zen":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, eol := range []string{"\n", "\r\n"} {
		id := []string{"lf-1", "crlf-1"}[i]
		code, signed, errOut := run(t, "", "sign", "--provider", "github", "--secret", "gh-secret", "--body", bodyFile, "--id", id)
		if code != 0 {
			t.Fatalf("sign exited %d: %s", code, errOut)
		}
		// As the shell's $(...) gives it: trailing newlines removed.
		lines := strings.TrimRight(strings.ReplaceAll(signed, "\n", eol), "\r\n")
		out := must("", "verify", "--endpoint", "gh", "--body", bodyFile, "-H", lines)
		if !strings.Contains(out, "VERDICT_ACCEPTED") || !strings.Contains(out, `"eventId": "`+id+`"`) {
			t.Errorf("verify -H with sign's %q-separated lines:\n%s", eol, out)
		}
	}
	// A line that is not a header is still a usage error (exit 2), naming the -H.
	code, _, errOut := run(t, "", "verify", "--endpoint", "gh", "--body", bodyFile, "-H", "X-GitHub-Delivery: a\nno colon")
	if code != 2 || !strings.Contains(errOut, "-H") {
		t.Errorf("an -H line without a colon: exit %d, stderr %q; want exit 2 naming -H", code, errOut)
	}
}
