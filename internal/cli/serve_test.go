package cli

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestServeDeadLettersSpentDeliveriesAtStart: a delivery nacked three times under
// --max-attempts 5 has no attempts left when serve restarts with --max-attempts 2, and the
// start moves it to the dead letters rather than leave it pending, leasable by no one.
func TestServeDeadLettersSpentDeliveriesAtStart(t *testing.T) {
	keyring := testpki.Keyring(t)
	cfg := storeConfig{dataDir: t.TempDir()}
	serve := func(maxAttempts int) (must func(stdin string, args ...string) string, stop func()) {
		t.Helper()
		return serveForTest(t, &cfg, keyring, serveConfig{listen: "127.0.0.1:0", maxAttempts: maxAttempts,
			cacheTTL: server.DefaultCacheTTL, claimCacheSize: server.DefaultClaimCacheSize, claimCacheTTL: server.DefaultClaimCacheTTL})
	}

	must, stop := serve(5)
	acceptDeliveries(t, must, "d-1")
	for range 3 {
		var leased struct {
			Deliveries []struct {
				InboxID    string `json:"inboxId"`
				LeaseToken string `json:"leaseToken"`
			} `json:"deliveries"`
		}
		out := must("", "inbox", "lease", "--max", "1")
		if err := json.Unmarshal([]byte(out), &leased); err != nil || len(leased.Deliveries) != 1 {
			t.Fatalf("inbox lease printed %s (%v)", out, err)
		}
		d := leased.Deliveries[0]
		must("", "inbox", "nack", "--id", d.InboxID, "--lease", d.LeaseToken, "--retry-after", "0s", "--error", "downstream down")
	}
	stop()

	must, _ = serve(2)
	if out := must("", "inbox", "dead"); !strings.Contains(out, "attempts used up: --max-attempts lowered to 2; last error: downstream down") {
		t.Fatalf("inbox dead after the restart with --max-attempts 2:\n%s", out)
	}
	if out := must("", "inbox", "stats"); strings.Contains(out, `"pending"`) || !strings.Contains(out, `"dead": "1"`) {
		t.Fatalf("inbox stats after the restart with --max-attempts 2:\n%s", out)
	}
}

// TestServeChecksRetention: a dedupe window or inbox retention that is not positive is refused
// (it used to mean the default, silently), and a window shorter than Stripe's three days of
// retries is taken with a warning naming the flag.
func TestServeChecksRetention(t *testing.T) {
	for _, c := range []struct {
		window, retention time.Duration
		refused, warned   bool
	}{
		{window: 30 * 24 * time.Hour, retention: time.Hour},
		{window: MinSafeDedupeWindow, retention: time.Hour},
		{window: time.Hour, retention: time.Hour, warned: true},
		{window: 0, retention: time.Hour, refused: true},
		{window: -time.Hour, retention: time.Hour, refused: true},
		{window: 30 * 24 * time.Hour, retention: 0, refused: true},
	} {
		var logs bytes.Buffer
		err := checkRetention(slog.New(slog.NewJSONHandler(&logs, nil)), server.Retention{DedupeWindow: c.window, AckedRetention: c.retention})
		if (err != nil) != c.refused {
			t.Errorf("window %s, retention %s: %v, want refused %v", c.window, c.retention, err, c.refused)
		}
		if warned := strings.Contains(logs.String(), `"level":"WARN"`) && strings.Contains(logs.String(), "--dedupe-window"); warned != c.warned {
			t.Errorf("window %s: warned %v, want %v; log %s", c.window, warned, c.warned, logs.String())
		}
	}
	// And serve itself refuses before it opens anything.
	if code, _, errOut := run(t, "", "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--dedupe-window", "0s"); code != 2 || !strings.Contains(errOut, "--dedupe-window") || strings.Contains(errOut, "generated a new master key") {
		t.Errorf("serve --dedupe-window 0s: exit %d, %q; want it refused", code, errOut)
	}
}

// setMasterKeyEnv sets $HOOKVERIFY_MASTER_KEY to a new key for the test and returns the key.
func setMasterKeyEnv(t *testing.T) []byte {
	t.Helper()
	key, _ := secretbox.NewKey()
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(key))
	return key
}

// TestServeStopsOnAnUnusableDatabaseURL: a --database-url that cannot be parsed is a
// configuration mistake no retry will mend. serve retried it for ever ("storage not ready;
// retrying" every 5 s, /readyz 503), so a deployment with a typo in its URL looked like a
// database that was slow to come up, and never failed. It must exit with an error that says
// what is wrong, and without the URL's password.
func TestServeStopsOnAnUnusableDatabaseURL(t *testing.T) {
	setMasterKeyEnv(t)
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

// TestMasterKeyFileFlagWinsOverEnvironment: --master-key-file, given on the command line, is
// the key serve uses even when $HOOKVERIFY_MASTER_KEY is also set. The flag's help says the
// variable is its default, and the master-key rotation runbook restarts the instances with
// --master-key-file new.key --old-master-key-file old.key: where the old key also sits in the
// environment (a unit file, a container spec), the new key must not be silently ignored, or
// the rotation seals nothing under it, rekey reports every secret under the old key, and
// dropping the old key later locks every secret away.
func TestMasterKeyFileFlagWinsOverEnvironment(t *testing.T) {
	envKey := setMasterKeyEnv(t)
	path := filepath.Join(t.TempDir(), "new.key")
	fileKey, _, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := storeConfig{dataDir: t.TempDir(), masterKeyFile: path}
	keyring, err := cfg.keyring(newTestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keyring.CurrentKeyID(), secretbox.KeyID(fileKey); got != want {
		t.Fatalf("current master key = %s (the environment's is %s), want %s from --master-key-file",
			got, secretbox.KeyID(envKey), want)
	}
}

// TestServeStopsOnASchemaFromANewerRelease: serve of this release on a data directory that a
// newer release has migrated (a rollback) exits with an error that says why, rather than serve
// a schema it does not know, or retry for ever as though the database were slow to come up.
func TestServeStopsOnASchemaFromANewerRelease(t *testing.T) {
	setMasterKeyEnv(t)
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 0)`, 1_000_000); err != nil {
		t.Fatal(err)
	}
	db.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out lockedBuffer
	err = runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
		"--listen", "127.0.0.1:0", "--data-dir", dir,
	})
	if ctx.Err() != nil || err == nil {
		t.Fatalf("serve on a newer schema still running after 10 s (err %v); log:\n%s", err, out.String())
	}
	if !strings.Contains(err.Error(), "newer release") {
		t.Errorf("serve's error %q does not say a newer release migrated the database", err)
	}
}
