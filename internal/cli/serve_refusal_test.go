package cli

import (
	"context"
	"errors"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestServeStopsOnADatabaseThatRefusesItsConfiguration: serve whose --database-url names a
// database that does not exist (or a role that does not, a wrong password) used to retry for
// ever, a WARN every 5 s, looking like a database still starting up. No retry mends it: serve
// must stop at once, exit 1, with an error naming the cause and not the password.
func TestServeStopsOnADatabaseThatRefusesItsConfiguration(t *testing.T) {
	setMasterKeyEnv(t)
	u, err := neturl.Parse(pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	const password = "S3cretPassw0rd"
	u.User = neturl.UserPassword("postgres", password)
	u.Path = "/hv_no_such_database"
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out lockedBuffer
	start := time.Now()
	err = runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
		"--listen", "127.0.0.1:0", "--database-url", u.String(),
	})
	if ctx.Err() != nil || err == nil {
		t.Fatalf("serve on a database that does not exist still running after %v (err %v); log:\n%s", time.Since(start).Round(time.Second), err, out.String())
	}
	if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "3D000") {
		t.Errorf("serve's error %q does not say the database does not exist", err)
	}
	if strings.Contains(err.Error()+out.String(), password) {
		t.Errorf("the password is in the error or the log: %v\n%s", err, out.String())
	}
}
