package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSignSignsTheGivenURLAndPrintsASignedBody: for a protocol that signs the URL (Square),
// sign's output is the signature of --url, as the protocol makes it; for one that carries its
// signature in the body (Mailgun), the signed body is printed after the headers, since sending
// the original body would not verify.
func TestSignSignsTheGivenURLAndPrintsASignedBody(t *testing.T) {
	t.Parallel()
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"event_id":"evt_url","type":"payment.created"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	signURL := func(url string) string {
		t.Helper()
		code, out, errOut := run(t, "", "sign", "--provider", "square", "--secret", "square-signature-key", "--body", body,
			"--timestamp", "1767225600", "--url", url)
		if code != 0 {
			t.Fatalf("sign --url %s: exit %d, %s", url, code, errOut)
		}
		return out
	}
	a, b := signURL("https://hooks.example.com/square"), signURL("https://hooks.example.com/other")
	if a == b {
		t.Errorf("sign gave the same output for two --url values:\n%s", a)
	}

	code, out, errOut := run(t, "", "sign", "--provider", "mailgun", "--secret", "key-0123456789abcdef0123456789abcdef", "--body", body, "--timestamp", "1767225600")
	if code != 0 {
		t.Fatalf("sign --provider mailgun: exit %d, %s", code, errOut)
	}
	if _, signedBody, ok := strings.Cut(out, "\n\n"); !ok || !strings.Contains(signedBody, `"signature"`) {
		t.Errorf("sign --provider mailgun printed no signed body after the headers:\n%s", out)
	}
}

// TestSignRequiresASecret: sign without --secret is a usage error (exit 2), as without
// --provider or --body.
func TestSignRequiresASecret(t *testing.T) {
	t.Parallel()
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run(t, "", "sign", "--provider", "stripe", "--body", body); code != 2 || out != "" || !strings.Contains(errOut, "--secret") {
		t.Errorf("sign without --secret: exit %d, stdout %q, stderr %q; want 2 naming --secret", code, out, errOut)
	}
}
