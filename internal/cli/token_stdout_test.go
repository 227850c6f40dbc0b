package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestTokenCreateWithStandardOutputClosed: README says a token that cannot be printed,
// standard output closed among the causes, is revoked. But Go's runtime opens /dev/null in
// place of a standard descriptor closed at start, so the write succeeded, into /dev/null: the
// command exited 0 and left a live token whose secret nobody saw. It must not leave one.
func TestTokenCreateWithStandardOutputClosed(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no sh to close a descriptor with")
	}
	addr, _, _ := serverWithToken(t, "first", "verify:acme-*")
	for _, tc := range []struct{ name, redirect string }{
		{"closed", ">&-"},
		{"dev-null", ">/dev/null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "unseen-" + tc.name
			cmd := exec.Command("sh", "-c", `exec "$@" `+tc.redirect, "sh", os.Args[0], "-test.run=^TestTokenCreateBrokenPipeChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "HOOKVERIFY_REVIEW_TOKEN_CREATE_ARGS="+strings.Join(
				[]string{"token", "create", "--name", name, "--scope", "verify:acme-*", "--server", addr}, "\n"))
			var errOut bytes.Buffer
			cmd.Stderr = &errOut
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Errorf("token create %s: %v (want exit status 1); stderr %q", tc.redirect, err, errOut.String())
			}
			for _, tok := range tokensNamed(t, addr, name) {
				if tok.RevokedAt == "" {
					t.Errorf("token %s, printed with standard output %s, is live and nobody saw its secret; stderr %q", tok.ID, tc.redirect, errOut.String())
				}
			}
		})
	}
}
