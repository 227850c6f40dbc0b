package cli

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/server/secretbox"
)

// TestServeStopsOnAnUnusableDatabaseURL: a --database-url that cannot be parsed is a
// configuration mistake no retry will mend. serve retried it for ever ("storage not ready;
// retrying" every 5 s, /readyz 503), so a deployment with a typo in its URL looked like a
// database that was slow to come up, and never failed. It must exit with an error that says
// what is wrong, and without the URL's password.
func TestServeStopsOnAnUnusableDatabaseURL(t *testing.T) {
	key, _ := secretbox.NewKey()
	t.Setenv("HOOKVERIFY_MASTER_KEY", base64.StdEncoding.EncodeToString(key))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out lockedBuffer
	start := time.Now()
	err := runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
		"--listen", "127.0.0.1:0",
		"--database-url", "postgres://hv:S3cretPassw0rd@127.0.0.1:1/hv?sslmode=disable&connect_timeout=%zz",
	})
	if ctx.Err() != nil || err == nil {
		t.Fatalf("serve with an unparsable --database-url still running after %v (err %v); log:\n%s", time.Since(start).Round(time.Second), err, out.String())
	}
	if !strings.Contains(err.Error(), "database URL") {
		t.Errorf("serve's error %q does not name the database URL", err)
	}
	if strings.Contains(err.Error()+out.String(), "S3cretPassw0rd") {
		t.Errorf("the password is in the error or the log: %v\n%s", err, out.String())
	}
}
