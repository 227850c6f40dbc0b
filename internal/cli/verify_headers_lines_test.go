package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestVerifyHeaderLineErrorNamesOnlyThatLine: an -H value now holds every header sign printed,
// among them, for a static-credential provider (GitLab's token, shared-token), the secret
// itself. A line that is not a header is a usage error, and the error must name that line,
// not quote the whole value with the secret token in it.
func TestVerifyHeaderLineErrorNamesOnlyThatLine(t *testing.T) {
	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"object_kind":"push"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const token = "glpat-review-secret-token-7"
	// No server is needed: the -H value is refused before any call.
	code, _, errOut := run(t, "", "verify", "--endpoint", "gl", "--body", bodyFile, "--server", "127.0.0.1:1",
		"-H", "Idempotency-Key: e1\nX-Gitlab-Token: "+token+"\nnot a header")
	if code != 2 {
		t.Fatalf("exit %d, want 2 (usage); stderr %q", code, errOut)
	}
	if strings.Contains(errOut, token) {
		t.Errorf("the usage error quotes the secret token of another line: %q", errOut)
	}
	if !strings.Contains(errOut, "not a header") {
		t.Errorf("the usage error does not name the line at fault: %q", errOut)
	}
}

// TestVerifySignOutputURLLineNotSentAsHeader: for a provider whose credential travels in the URL
// (Mailchimp), sign prints "URL: <url to call>" before the headers. Passed whole to
// `verify -H "$(hookverify sign ...)"`, as the README says to, that line went to the server as
// a header named URL, the URL stayed --url's default without the secret, and the delivery was
// rejected although sign and verify had the same secret. verify refuses the line (usage
// error, exit 2) and says to give it with --url, without quoting it (it holds the secret).
func TestVerifySignOutputURLLineNotSentAsHeader(t *testing.T) {
	remote, must := startTestServer(t)
	const secret = "mcReviewSecret0123456789"
	must("", "endpoint", "create", "--id", "mc", "--provider", "mailchimp")
	must(secret, "secret", "add", "--endpoint", "mc")
	bodyFile := filepath.Join(t.TempDir(), "body.txt")
	if err := os.WriteFile(bodyFile, []byte("type=subscribe&fired_at=2026-12-06+04%3A00%3A00&data%5Bid%5D=8a25ff1d98"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, signed, errOut := run(t, "", "sign", "--provider", "mailchimp", "--secret", secret, "--body", bodyFile)
	if code != 0 {
		t.Fatalf("sign exited %d: %s", code, errOut)
	}
	if !strings.HasPrefix(signed, "URL: ") {
		t.Fatalf("sign printed no URL line for mailchimp:\n%s", signed)
	}
	args := append([]string{"verify", "--endpoint", "mc", "--body", bodyFile, "-H", strings.TrimRight(signed, "\n")}, remote...)
	code, out, errOut := run(t, "", args...)
	if code != 2 || !strings.Contains(errOut, "--url") {
		t.Errorf("verify -H with sign's URL line: exit %d, stdout %q, stderr %q; want exit 2 pointing at --url", code, out, errOut)
	}
	if strings.Contains(errOut, secret) {
		t.Errorf("the usage error quotes the URL with its secret: %q", errOut)
	}
	// The URL given with --url and the other lines as headers: accepted.
	urlLine, rest, _ := strings.Cut(strings.TrimRight(signed, "\n"), "\n")
	got := must("", "verify", "--endpoint", "mc", "--body", bodyFile, "--url", strings.TrimPrefix(urlLine, "URL: "), "-H", rest)
	if !strings.Contains(got, "VERDICT_ACCEPTED") {
		t.Errorf("verify with sign's URL in --url:\n%s", got)
	}
}
