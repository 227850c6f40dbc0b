package cli

import (
	"regexp"
	"strings"
	"testing"
)

// TestAuditPageTokenWithADurationAgo: the page token of audit continues only the listing with
// the same --since and --until, and "--since 1h" is another time at each call, so the next
// page, asked for as the note says (the same flags and --page-token), was always refused by
// the server as a token "given for other" filters: a trail listed from a time ago could not be
// read past its first page but with --all. The note must give the time to pass, and a
// duration with --page-token must be refused before the call, saying so.
func TestAuditPageTokenWithADurationAgo(t *testing.T) {
	remote, must := startTestServer(t)
	for _, id := range []string{"e1", "e2", "e3"} {
		must("", "endpoint", "create", "--id", id, "--provider", "github")
	}
	code, out, errOut := run(t, "", append([]string{"audit", "--since", "1h", "--limit", "2"}, remote...)...)
	if code != 0 {
		t.Fatalf("audit --since 1h: exit %d, %q", code, errOut)
	}
	token := regexp.MustCompile(`"nextPageToken":\s*"([^"]+)"`).FindStringSubmatch(out)
	if token == nil {
		t.Fatalf("audit --since 1h --limit 2 printed no next page token: %s", out)
	}
	since := regexp.MustCompile(`--since (\S+Z)`).FindStringSubmatch(errOut)
	if since == nil {
		t.Fatalf("audit --since 1h: the note does not give the --since time to go on with: %q", errOut)
	}
	code, out, errOut = run(t, "", append([]string{"audit", "--since", since[1], "--limit", "2", "--page-token", token[1]}, remote...)...)
	if code != 0 || !strings.Contains(out, "e3") {
		t.Errorf("audit --since %s --page-token: exit %d, %s %q; want the next page", since[1], code, out, errOut)
	}
	code, _, errOut = run(t, "", append([]string{"audit", "--since", "1h", "--limit", "2", "--page-token", token[1]}, remote...)...)
	if code != 2 || !strings.Contains(errOut, "RFC 3339") || strings.Contains(errOut, "given for other") {
		t.Errorf("audit --since 1h --page-token: exit %d, %q; want a usage error asking for the RFC 3339 time", code, errOut)
	}
}
