package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestEdgeRefusesFlagsOfTheWrongFormBeforeListening: README's exit statuses promise 2 for a
// value out of range or of the wrong form, found before edge listens. A --route that
// http.ServeMux cannot parse was a failure (exit 1), and a negative timeout or Retry-After
// was taken in silence: net/http reads a negative timeout as none, so --read-timeout -1s
// turned the slow-upload bound off while the edge started as if all were well.
func TestEdgeRefusesFlagsOfTheWrongFormBeforeListening(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--route", "/hooks/{endpoint}/{endpoint}"}, "--route"},
		{[]string{"--read-timeout", "-1s"}, "--read-timeout"},
		{[]string{"--read-header-timeout", "-1s"}, "--read-header-timeout"},
		{[]string{"--write-timeout", "-1s"}, "--write-timeout"},
		{[]string{"--retry-after", "-5s"}, "--retry-after"},
	} {
		args := append([]string{"--listen", "127.0.0.1:0", "--metrics-listen", ""}, c.args...)
		// Were it started, the edge would serve until ctx ends: then it returns nil.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		var errOut bytes.Buffer
		err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errOut}, args)
		cancel()
		if !errors.Is(err, errUsage) || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("edge %q: err %v (stderr %q); want a usage error naming %s before listening", c.args, err, errOut.String(), c.want)
		}
	}
}

// TestEdgeRefusesATokenInClearInItsFlags: with a token ($HOOKVERIFY_TOKEN or --token-file) and
// a verifier that is not on loopback, the edge refuses to send the token in clear, as it
// should, but said so in the client package's Go API ("use WithTLS or WithTLSFiles"), which
// an operator of `hookverify edge` has no way to give; the CLI's other commands name --ca.
func TestEdgeRefusesATokenInClearInItsFlags(t *testing.T) {
	t.Setenv(tokenEnv, "hvt_"+strings.Repeat("x", 43))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var errOut bytes.Buffer
	err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &errOut},
		[]string{"--listen", "127.0.0.1:0", "--verifier", "192.0.2.1:7700"})
	if err == nil || !strings.Contains(err.Error(), "--verifier-ca") || strings.Contains(err.Error(), "WithTLS") ||
		!strings.Contains(err.Error(), "$"+tokenEnv) || strings.Contains(err.Error(), "hvt_") {
		t.Errorf("err %v (stderr %q); want a refusal naming --verifier-ca and where the token came from, never the token", err, errOut.String())
	}
}

// TestEdgeNamesWhereAMalformedTokenCameFrom: a token with a space or a control character (an
// env file's stray quote or tab) was refused in the client package's words, without saying
// whether $HOOKVERIFY_TOKEN or --token-file held it; the other commands name the source.
func TestEdgeNamesWhereAMalformedTokenCameFrom(t *testing.T) {
	file := t.TempDir() + "/token"
	if err := os.WriteFile(file, []byte("hvt_a\tb"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}},
		[]string{"--listen", "127.0.0.1:0", "--token-file", file})
	if err == nil || !strings.Contains(err.Error(), "--token-file "+file) || strings.Contains(err.Error(), "hvt_a") {
		t.Errorf("err %v; want a refusal naming --token-file %s, never the token", err, file)
	}
}
