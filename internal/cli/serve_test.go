package cli

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
)

// TestServeDeadLettersSpentDeliveriesAtStart: a delivery nacked three times under
// --max-attempts 5 has no attempts left when serve restarts with --max-attempts 2, and the
// start moves it to the dead letters rather than leave it pending, leasable by no one.
func TestServeDeadLettersSpentDeliveriesAtStart(t *testing.T) {
	key, _ := secretbox.NewKey()
	keyring, err := secretbox.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
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
	if code, _, errOut := run(t, "", "serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--dedupe-window", "0s"); code != 1 || !strings.Contains(errOut, "--dedupe-window") {
		t.Errorf("serve --dedupe-window 0s: exit %d, %q; want it refused", code, errOut)
	}
}
