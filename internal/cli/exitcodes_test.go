package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryUsageErrorExits2: a wrong command line exits 2 whatever is wrong with it (a
// required flag missing, a value the command cannot take, an unknown flag, a stray argument),
// as Main's doc and the README say, and names what is wrong; 1 is left for failures, so that a
// script can tell "fix the command" from "try again". None of these reaches the server (none
// listens at 127.0.0.1:1: a call would exit 1).
func TestEveryUsageErrorExits2(t *testing.T) {
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"id":"evt_1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"endpoint", "create", "--id", "x"}, "--provider"},
		{"", []string{"endpoint", "create", "--id", "x", "--provider", "github", "--option", "novalue"}, "--option"},
		{"", []string{"endpoint", "update", "--id", "x", "--option", "novalue"}, "--option"},
		{"", []string{"endpoint", "create", "--id", "x", "--provider", "stripe", "--tolerance", "-5m"}, "--tolerance"},
		{"", []string{"endpoint", "create", "--id", "x", "--provider", "stripe", "--max-body-bytes", "-1"}, "--max-body-bytes"},
		{"", []string{"endpoint", "update", "--id", "x", "--tolerance", "200h"}, "--tolerance"},
		{"", []string{"endpoint", "get"}, "--id"},
		{"", []string{"endpoint", "update"}, "--id"},
		{"", []string{"endpoint", "list", "--timeout", "0"}, "--timeout"},
		{"", []string{"endpoint", "list", "stray"}, "stray"},
		{"", []string{"endpoint", "list", "--bogus"}, "bogus"},
		{"", []string{"endpoint", "list", "--cert", "client.pem"}, "--key"},
		{"", []string{"inbox", "stats", "--key", "client.key"}, "--cert"},
		{"s3cret", []string{"secret", "add"}, "--endpoint"},
		{"s3cret", []string{"secret", "add", "--endpoint", "e", "--not-after", "tomorrow"}, "--not-after"},
		{"s3cret", []string{"secret", "rotate"}, "--endpoint"},
		{"s3cret", []string{"secret", "rotate", "--endpoint", "e", "--overlap", "-1h"}, "--overlap"},
		{"", []string{"secret", "retire", "--endpoint", "e"}, "--id"},
		{"", []string{"secret", "list"}, "--endpoint"},
		{"s3cret", []string{"secret", "fingerprint"}, "--endpoint"},
		{"", []string{"token", "create", "--name", "n"}, "--scope"},
		{"", []string{"token", "revoke"}, "--id"},
		{"", []string{"inbox", "ack"}, "--id"},
		{"", []string{"inbox", "ack", "--id", "a"}, "--lease"},
		{"", []string{"inbox", "ack", "--id", "a", "--lease", ""}, "--lease"},
		{"", []string{"inbox", "nack", "--id", "a"}, "--lease"},
		{"", []string{"inbox", "extend", "--lease", "l"}, "--id"},
		{"", []string{"inbox", "requeue"}, "--id"},
		{"", []string{"verify", "--endpoint", "e"}, "--body"},
		{"", []string{"verify", "--endpoint", "e", "--body", body, "-H", "no colon"}, "-H"},
		{"", []string{"audit", "--since", "1d"}, "--since"},
		{"", []string{"audit", "--until", "-5m"}, "--until"},
		{"", []string{"rekey", "--page", "0"}, "--page"},
		{"", []string{"sign", "--provider", "stripe", "--secret", "whsec_x"}, "--body"},
		{"", []string{"sign", "--provider", "nope", "--secret", "x", "--body", body}, "--provider"},
		{"", []string{"sign", "--provider", "stripe", "--secret", "whsec_x", "--body", body, "--timestamp", "yesterday"}, "--timestamp"},
		{"", []string{"sign", "--provider", "github", "--secret", "x", "--body", body}, "--id"},
		{"", []string{"sign", "--provider", "stripe", "--secret", "whsec_x", "--body", body, "--timestamp", "-5"}, "1970"},
		{"", []string{"sign", "--provider", "stripe", "--secret", "whsec_x", "--body", body, "--timestamp", "1969-12-31T23:59:59Z"}, "1970"},
	} {
		code, out, errOut := run(t, c.stdin, append(c.args, "--server", "127.0.0.1:1")...)
		if c.args[0] == "sign" || c.args[1] == "fingerprint" {
			// Local commands: no --server flag.
			code, out, errOut = run(t, c.stdin, c.args...)
		}
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a message naming %s", c.args, code, out, errOut, c.want)
		}
	}
}

// TestInboxAckOfAnEmptyLeaseIsNothingToDo: `inbox lease > leased.json; inbox ack --leased
// leased.json` under `set -e` must not stop the script when the inbox had nothing: the ack
// exits 0 with a note on standard error and the (empty) JSON results on standard output. A
// file that is not what `inbox lease` prints is still an error.
func TestInboxAckOfAnEmptyLeaseIsNothingToDo(t *testing.T) {
	remote, must := startTestServer(t)
	leased := must("", "inbox", "lease", "--max", "10")
	code, out, errOut := run(t, leased, append([]string{"inbox", "ack", "--leased", "-"}, remote...)...)
	if code != 0 || !strings.Contains(errOut, "nothing to ack") || strings.TrimSpace(out) != "{}" {
		t.Errorf("acking the empty lease %q: exit %d, stdout %q, stderr %q; want 0, {} and a note", leased, code, out, errOut)
	}
	if code, _, errOut := run(t, "", append([]string{"inbox", "ack", "--leased", "-"}, remote...)...); code != 1 || !strings.Contains(errOut, "not the JSON") {
		t.Errorf("acking an empty file: exit %d, stderr %q; want 1", code, errOut)
	}
}

// TestSignTimestampInMillisecondsIsRefused: --timestamp is unix seconds (or RFC 3339) for every
// provider, but HubSpot, Recurly, Front, Contentful and Linear show milliseconds in their
// headers; such a value copied in must not sign for the year 56,000. It is refused as a usage
// error that gives the RFC 3339 time it stands for, and that time signs exactly the
// milliseconds the provider sent.
func TestSignTimestampInMillisecondsIsRefused(t *testing.T) {
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"id":"evt_1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ provider, ts, want string }{
		{"stripe", "1733350000123", "2024-12-04T22:06:40.123Z"},
		{"hubspot", "1733350000123", "2024-12-04T22:06:40.123Z"},
		{"stripe", "1733350000123456", "2024-12-04T22:06:40.123456Z"},
	} {
		code, out, errOut := run(t, "", "sign", "--provider", c.provider, "--secret", "whsec_x", "--body", body, "--timestamp", c.ts)
		if code != 2 || out != "" || !strings.Contains(errOut, "seconds") || !strings.Contains(errOut, c.want) {
			t.Errorf("sign --provider %s --timestamp %s: exit %d, stdout %q, stderr %q; want 2 naming seconds and %s", c.provider, c.ts, code, out, errOut, c.want)
		}
	}
	h := signHeaders(t, "--provider", "hubspot", "--secret", "x", "--body", body, "--timestamp", "2024-12-04T22:06:40.123Z")
	if got := h.Get("X-HubSpot-Request-Timestamp"); got != "1733350000123" {
		t.Errorf("hubspot signed at 2024-12-04T22:06:40.123Z sends timestamp %q, want 1733350000123", got)
	}
	h = signHeaders(t, "--provider", "stripe", "--secret", "whsec_x", "--body", body, "--timestamp", "1733350000")
	if got := h.Get("Stripe-Signature"); !strings.HasPrefix(got, "t=1733350000,") {
		t.Errorf("stripe signed at 1733350000: %q", got)
	}
}

// TestSignTakesTheEndpointsOptions: an endpoint of a protocol configured by options
// (generic-hmac's header, encoding, template...) verifies only what is signed under the same
// options, so sign takes them as verify's endpoint does: --option key=value. Options the
// protocol refuses, or a protocol that takes none, are usage errors.
func TestSignTakesTheEndpointsOptions(t *testing.T) {
	remote, must := startTestServer(t)
	body := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(body, []byte(`{"id":"evt_opt"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := []string{"--option", "header=X-Hub-Sig", "--option", "prefix=sha256=", "--option", "encoding=base64"}
	must("", append([]string{"endpoint", "create", "--id", "gen", "--provider", "generic-hmac"}, opts...)...)
	must("s3cret", "secret", "add", "--endpoint", "gen")
	h := signHeaders(t, append([]string{"--provider", "generic-hmac", "--secret", "s3cret", "--body", body}, opts...)...)
	sig := h.Get("X-Hub-Sig")
	if !strings.HasPrefix(sig, "sha256=") {
		t.Fatalf("sign with the endpoint's options sent %v", h)
	}
	if out := must("", "verify", "--endpoint", "gen", "--body", body, "-H", "X-Hub-Sig: "+sig); !strings.Contains(out, "VERDICT_ACCEPTED") {
		t.Errorf("the signed delivery did not verify:\n%s", out)
	}
	for _, args := range [][]string{
		{"--provider", "generic-hmac", "--option", "encoding=rot13"},
		{"--provider", "generic-hmac", "--option", "novalue"},
		{"--provider", "stripe", "--option", "header=X"},
	} {
		code, out, errOut := run(t, "", append([]string{"sign", "--secret", "s3cret", "--body", body}, args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, "option") {
			t.Errorf("sign %q: exit %d, stdout %q, stderr %q; want 2 naming the option", args, code, out, errOut)
		}
	}
	_ = remote
}

// TestLongRunningCommandsUsageErrorsExit2: serve, edge and bench refuse a wrong command line
// with exit 2 too, before they listen or call anything, naming the flag; a supervisor or a
// script tells "fix the unit file" from "it failed" by it.
func TestLongRunningCommandsUsageErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	serve := func(args ...string) []string {
		return append([]string{"serve", "--data-dir", dir, "--listen", "127.0.0.1:0"}, args...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{serve("--log-level", "loud"), "--log-level"},
		{serve("--gc-percent", "0"), "--gc-percent"},
		{serve("--dedupe-window", "-1s"), "--dedupe-window"},
		{serve("--inbox-retention", "0s"), "--inbox-retention"},
		{serve("--max-attempts", "0"), "--max-attempts"},
		{serve("--max-pending-per-endpoint", "-1"), "--max-pending-per-endpoint"},
		{serve("--max-pending-total", "-1"), "--max-pending-total"},
		{serve("--cache-ttl", "-1s"), "--cache-ttl"},
		{serve("--claim-cache", "-1"), "--claim-cache"},
		{serve("--claim-cache-ttl", "-1s"), "--claim-cache-ttl"},
		{serve("--lease-concurrency", "-1"), "--lease-concurrency"},
		{serve("--pprof"), "--pprof"},
		{serve("--http-listen", "0.0.0.0:0"), "--http-listen"},
		{serve("--tls-cert", "cert.pem"), "--tls-key"},
		{serve("--client-ca", "ca.pem"), "--client-ca"},
		{[]string{"serve", "--data-dir", dir, "--listen", "0.0.0.0:0"}, "--listen"},
		{[]string{"edge", "--verifier", "http://127.0.0.1:7700"}, "--verifier"},
		{[]string{"edge", "--verifier", "ipv4:foo.example:7700"}, "--verifier"},
		{[]string{"edge", "--route", "/hooks/x"}, "--route"},
		{[]string{"edge", "--tls-cert", "cert.pem"}, "--tls-key"},
		{[]string{"edge", "--verifier-cert", "cert.pem"}, "--verifier-key"},
		{[]string{"edge", "--max-body-bytes", "0"}, "--max-body-bytes"},
		{[]string{"edge", "--verifier-timeout", "0s"}, "--verifier-timeout"},
		{[]string{"edge", "--verifier-timeout", "10s", "--write-timeout", "10s"}, "--write-timeout"},
		{[]string{"edge", "--public-url-base", "hooks.example.com"}, "--public-url-base"},
		{[]string{"bench", "--server", "127.0.0.1:1", "--workers", "0"}, "--workers"},
		{[]string{"bench", "--server", "127.0.0.1:1", "--mix", "new"}, "--mix"},
		{[]string{"bench", "--server", "127.0.0.1:1", "--mix", "old=1"}, "--mix"},
		{[]string{"bench", "--server", "127.0.0.1:1", "--mix", "new=0"}, "--mix"},
	} {
		code, out, errOut := run(t, "", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and a message naming %s", c.args, code, out, errOut, c.want)
		}
	}
}

// TestStrayArgumentOfASecretCommandIsNotRepeated: `secret add --endpoint e whsec_...`, the
// secret typed where standard input was meant, is refused as a usage error without repeating
// the argument, which would put the secret into the terminal's scrollback or a CI log; other
// commands still name their stray argument.
func TestStrayArgumentOfASecretCommandIsNotRepeated(t *testing.T) {
	const secret = "whsec_c2VjcmV0LXR5cGVkLW9uLXRoZS1jb21tYW5kLWxpbmU"
	for _, args := range [][]string{
		{"secret", "add", "--endpoint", "e", secret},
		{"secret", "rotate", "--endpoint", "e", secret},
		{"secret", "fingerprint", "--endpoint", "e", secret},
		{"token", "revoke", "--id", "-", secret},
	} {
		code, out, errOut := run(t, "", args...)
		if code != 2 || strings.Contains(out+errOut, secret) || !strings.Contains(errOut, "standard input") ||
			!strings.Contains(errOut, "| hookverify "+args[0]+" "+args[1]+" ...") || strings.Contains(errOut, "hookverify hookverify") {
			t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want 2, the argument not shown, and where the secret goes", args[0], args[1], code, out, errOut)
		}
	}
	if code, _, errOut := run(t, "", "endpoint", "list", "stray"); code != 2 || !strings.Contains(errOut, `"stray"`) {
		t.Errorf("endpoint list stray: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
}

// TestMalformedAddressListExits2: an ipv4:/ipv6: list client.Dial would refuse is a value of
// the wrong form on the command line (exit 2, naming the flag), not a failed call (exit 1).
func TestMalformedAddressListExits2(t *testing.T) {
	for _, server := range []string{"ipv4:", "ipv4:foo.example:7700", "ipv6:[::1"} {
		if code, _, errOut := run(t, "", "endpoint", "list", "--server", server); code != 2 || !strings.Contains(errOut, "--server") {
			t.Errorf("--server %s: exit %d, stderr %q; want 2 naming --server", server, code, errOut)
		}
	}
}
