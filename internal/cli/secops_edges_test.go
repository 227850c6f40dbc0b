package cli

import (
	"strings"
	"testing"
)

// TestAuditRefusesANegativeDurationAgo: --since and --until take a duration as that long ago;
// a negative one (a time in the future) is a usage error, refused before dialing.
func TestAuditRefusesANegativeDurationAgo(t *testing.T) {
	for _, f := range []string{"--since", "--until"} {
		code, out, errOut := run(t, "", "audit", "--server", "127.0.0.1:1", f, "-30m")
		if code != 2 || out != "" || !strings.Contains(errOut, f) {
			t.Errorf("audit %s -30m: exit %d, stdout %q, stderr %q; want exit 2 naming %s", f, code, out, errOut, f)
		}
	}
}

// TestRekeyRefusesAPageOfNoSecrets: rekey --page takes 1 to 1000 secrets per call; 0 is a
// usage error, refused before dialing.
func TestRekeyRefusesAPageOfNoSecrets(t *testing.T) {
	code, out, errOut := run(t, "", "rekey", "--server", "127.0.0.1:1", "--page", "0")
	if code != 2 || out != "" || !strings.Contains(errOut, "page") {
		t.Errorf("rekey --page 0: exit %d, stdout %q, stderr %q; want exit 2 naming --page", code, out, errOut)
	}
}

// TestSecretFingerprintRequiresTheEndpoint: the fingerprint is salted with the endpoint id, so
// secret fingerprint without --endpoint is a usage error and prints nothing (no fingerprint
// of an unsalted secret, and never the secret).
func TestSecretFingerprintRequiresTheEndpoint(t *testing.T) {
	code, out, errOut := run(t, "fingerprint-me", "secret", "fingerprint")
	if code != 2 || out != "" || !strings.Contains(errOut, "--endpoint") || strings.Contains(errOut, "fingerprint-me") {
		t.Errorf("secret fingerprint without --endpoint: exit %d, stdout %q, stderr %q; want exit 2 naming --endpoint", code, out, errOut)
	}
}
