package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-github/v74/github"
	"github.com/jackc/pgx/v5"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v84/webhook"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
)

// run invokes the command line like a user would and returns its exit code and output.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestDemoPlaysTheWholeStory(t *testing.T) {
	code, out, errOut := run(t, "", "demo")
	if code != 0 {
		t.Fatalf("demo exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"stripe: signed delivery", "stripe: redelivery after restart", "rotation overlap: both",
		"retired secret", "TIMESTAMP_OUT_OF_TOLERANCE", "Every case got the expected verdict.",
		"worker B gets the same delivery", "acks late: refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "<--") {
		t.Errorf("demo flagged an unexpected verdict:\n%s", out)
	}
}

// signHeaders runs `hookverify sign` and parses its "Name: value" lines.
func signHeaders(t *testing.T, args ...string) http.Header {
	t.Helper()
	code, out, errOut := run(t, "", append([]string{"sign"}, args...)...)
	if code != 0 {
		t.Fatalf("sign exited %d: %s", code, errOut)
	}
	h := http.Header{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		name, value, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("sign printed %q, not 'Name: value'", line)
		}
		h.Add(name, value)
	}
	return h
}

// TestSignOutputVerifiesWithOfficialSDKs checks `hookverify sign` against each provider's own
// verifier, so the test tool produces exactly what the provider would send.
func TestSignOutputVerifiesWithOfficialSDKs(t *testing.T) {
	dir := t.TempDir()
	bodyFile := filepath.Join(dir, "body.json")
	body := []byte(`{"id":"evt_cli_1","object":"event"}` + "\n")
	if err := os.WriteFile(bodyFile, body, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("stripe", func(t *testing.T) {
		h := signHeaders(t, "--provider", "stripe", "--secret", "whsec_cli", "--secret", "whsec_cli_next", "--body", bodyFile)
		for _, secret := range []string{"whsec_cli", "whsec_cli_next"} {
			if err := webhook.ValidatePayload(body, h.Get("Stripe-Signature"), secret); err != nil {
				t.Errorf("stripe-go rejects the signature for %s: %v", secret, err)
			}
		}
		if err := webhook.ValidatePayload(body, h.Get("Stripe-Signature"), "whsec_other"); err == nil {
			t.Error("stripe-go accepted the signature under another secret")
		}
	})
	t.Run("github", func(t *testing.T) {
		h := signHeaders(t, "--provider", "github", "--secret", "gh secret", "--body", bodyFile, "--id", "d-1")
		if err := github.ValidateSignature(h.Get("X-Hub-Signature-256"), body, []byte("gh secret")); err != nil {
			t.Errorf("go-github rejects the signature: %v", err)
		}
		if h.Get("X-GitHub-Delivery") != "d-1" {
			t.Errorf("X-GitHub-Delivery = %q", h.Get("X-GitHub-Delivery"))
		}
	})
	t.Run("standard-webhooks", func(t *testing.T) {
		secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		h := signHeaders(t, "--provider", "standard-webhooks", "--secret", secret, "--body", bodyFile, "--id", "msg_cli_1")
		wh, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(body, h); err != nil {
			t.Errorf("standard-webhooks library rejects the signature: %v", err)
		}
	})
	t.Run("explicit timestamp", func(t *testing.T) {
		h := signHeaders(t, "--provider", "stripe", "--secret", "whsec_cli", "--body", bodyFile, "--timestamp", "1700000000")
		if !strings.HasPrefix(h.Get("Stripe-Signature"), "t=1700000000,") {
			t.Errorf("Stripe-Signature = %q", h.Get("Stripe-Signature"))
		}
	})
	t.Run("unknown provider", func(t *testing.T) {
		if code, _, errOut := run(t, "", "sign", "--provider", "nope", "--secret", "s", "--body", bodyFile); code != 2 || !strings.Contains(errOut, "unknown provider") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
	t.Run("an id the protocol sends in a header, missing, names --id", func(t *testing.T) {
		if code, _, errOut := run(t, "", "sign", "--provider", "github", "--secret", "s", "--body", bodyFile); code != 2 || !strings.Contains(errOut, "X-GitHub-Delivery") || !strings.Contains(errOut, "--id") {
			t.Errorf("exit %d, stderr %q", code, errOut)
		}
	})
}

func TestServeRefusesNonLoopbackWithoutAuth(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:7700", "[::]:7700", "192.0.2.1:7700", ":7700"} {
		code, _, errOut := run(t, "", "serve", "--listen", addr, "--data-dir", t.TempDir())
		if code != 2 || !strings.Contains(errOut, "loopback") || !strings.Contains(errOut, "--require-auth") {
			t.Errorf("serve --listen %s: exit %d, stderr %q", addr, code, errOut)
		}
	}
	for _, addr := range []string{"127.0.0.1:1", "localhost:1", "[::1]:1"} {
		if err := requireLoopback(addr); err != nil {
			t.Errorf("requireLoopback(%s) = %v", addr, err)
		}
	}
	if code, _, errOut := run(t, "", "serve", "--listen", "127.0.0.1:0", "--http-listen", "0.0.0.0:0", "--require-auth", "--data-dir", t.TempDir()); code != 2 || !strings.Contains(errOut, "loopback") {
		t.Errorf("serve --http-listen 0.0.0.0:0: exit %d, stderr %q", code, errOut)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{}, {"nope"}, {"endpoint"}, {"endpoint", "create", "--bogus"}, {"secret", "frob"}} {
		if code, _, _ := run(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if code, _, errOut := run(t, "", "endpoint", "create", "--id", "x", "--server", "127.0.0.1:1"); code != 2 || !strings.Contains(errOut, "--provider") {
		t.Errorf("missing --provider: exit %d, %q", code, errOut)
	}
}

// TestClientCommandsAgainstAServer drives a real embedded server through the client commands,
// as an operator would, and checks that secrets never come back out.
// startTestServer runs an embedded server for the test and returns a function that runs a
// client command against it, failing the test unless it succeeds.
func startTestServer(t *testing.T) (remote []string, must func(stdin string, args ...string) string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	keyring := testpki.Keyring(t)
	cfg := storeConfig{dataDir: t.TempDir()}
	srv, err := startServer(ctx, newTestLogger(t), "127.0.0.1:0", keyring, cfg.openStore)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.stop)
	if err := srv.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	remote = []string{"--server", srv.addr}
	must = func(stdin string, args ...string) string {
		t.Helper()
		code, out, errOut := run(t, stdin, append(args, remote...)...)
		if code != 0 {
			t.Fatalf("%q exited %d: %s", args, code, errOut)
		}
		return out
	}
	return remote, must
}

func TestClientCommandsAgainstAServer(t *testing.T) {
	remote, must := startTestServer(t)
	const secret = "whsec_cli_operator_secret"
	const newSecret = "whsec_cli_operator_secret_2"
	var all strings.Builder // every output, searched for the secrets at the end
	record := func(s string) string { all.WriteString(s); return s }

	created := record(must("", "endpoint", "create", "--id", "ops-stripe", "--provider", "stripe", "--tolerance", "2m"))
	if !strings.Contains(created, `"timestampTolerance": "120s"`) || !strings.Contains(created, `"dedupeScope": "ops-stripe"`) {
		t.Errorf("endpoint create printed:\n%s", created)
	}
	added := record(must(secret+"\n", "secret", "add", "--endpoint", "ops-stripe"))
	var addResp struct {
		Secret struct{ ID string } `json:"secret"`
	}
	if err := json.Unmarshal([]byte(added), &addResp); err != nil || !strings.HasPrefix(addResp.Secret.ID, "sec_") {
		t.Fatalf("secret add printed %q (%v)", added, err)
	}

	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"id":"evt_ops_1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	verify := func(secrets ...string) string {
		t.Helper()
		args := []string{"--provider", "stripe", "--body", bodyFile}
		for _, s := range secrets {
			args = append(args, "--secret", s)
		}
		h := signHeaders(t, args...)
		return record(must("", "verify", "--endpoint", "ops-stripe", "--body", bodyFile, "-H", "Stripe-Signature: "+h.Get("Stripe-Signature")))
	}
	if out := verify(secret); !strings.Contains(out, "VERDICT_ACCEPTED") || !strings.Contains(out, addResp.Secret.ID) {
		t.Errorf("first verify:\n%s", out)
	}
	if out := verify(secret); !strings.Contains(out, "VERDICT_DUPLICATE") {
		t.Errorf("second verify:\n%s", out)
	}
	if out := verify("whsec_wrong"); !strings.Contains(out, "REJECT_REASON_SIGNATURE_MISMATCH") {
		t.Errorf("forged verify:\n%s", out)
	}

	record(must(newSecret, "secret", "rotate", "--endpoint", "ops-stripe", "--overlap", "1h"))
	listed := record(must("", "secret", "list", "--endpoint", "ops-stripe"))
	if strings.Count(listed, `"SECRET_STATE_EXPIRING"`) != 1 || strings.Count(listed, `"SECRET_STATE_ACTIVE"`) != 1 {
		t.Errorf("after rotation, secret list:\n%s", listed)
	}
	record(must("", "secret", "retire", "--endpoint", "ops-stripe", "--id", addResp.Secret.ID))
	if out := record(must("", "secret", "list", "--endpoint", "ops-stripe")); !strings.Contains(out, "SECRET_STATE_RETIRED") {
		t.Errorf("after retire, secret list:\n%s", out)
	}

	updated := record(must("", "endpoint", "update", "--id", "ops-stripe", "--disabled"))
	if !strings.Contains(updated, `"disabled": true`) || !strings.Contains(updated, `"timestampTolerance": "120s"`) {
		t.Errorf("update must change only the flags given:\n%s", updated)
	}
	if out := verify(newSecret); !strings.Contains(out, "REJECT_REASON_ENDPOINT_DISABLED") {
		t.Errorf("verify on a disabled endpoint:\n%s", out)
	}
	if out := record(must("", "endpoint", "list")); !strings.Contains(out, "ops-stripe") {
		t.Errorf("endpoint list:\n%s", out)
	}
	if out := record(must("", "endpoint", "get", "--id", "ops-stripe")); !strings.Contains(out, `"provider": "stripe"`) {
		t.Errorf("endpoint get:\n%s", out)
	}
	if out := record(must("", "providers")); !strings.Contains(out, `"standard-webhooks"`) {
		t.Errorf("providers:\n%s", out)
	}

	if code, _, errOut := run(t, "", append([]string{"secret", "add", "--endpoint", "ops-stripe"}, remote...)...); code != 1 || !strings.Contains(errOut, "standard input") {
		t.Errorf("secret add without stdin: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run(t, "", append([]string{"endpoint", "get", "--id", "nope"}, remote...)...); code != 1 || !strings.Contains(errOut, "NotFound") {
		t.Errorf("endpoint get unknown: exit %d, %q", code, errOut)
	}
	if strings.Contains(all.String(), "operator_secret") {
		t.Fatal("a secret appeared in client output")
	}
}

func TestMigrate(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		dir := t.TempDir()
		for i := 0; i < 2; i++ {
			if code, out, errOut := run(t, "", "migrate", "--data-dir", dir); code != 0 || !strings.Contains(out, "migrations applied") {
				t.Fatalf("migrate #%d: exit %d %q %q", i, code, out, errOut)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.Shared(t).NewDatabase(t)
		for i := 0; i < 2; i++ {
			if code, out, errOut := run(t, "", "migrate", "--database-url", url); code != 0 || !strings.Contains(out, "migrations applied") {
				t.Fatalf("migrate #%d: exit %d %q %q", i, code, out, errOut)
			}
		}
	})
	t.Run("postgres, waiting for a table in use", func(t *testing.T) {
		// A migration held up by another transaction says so on standard error, not silently.
		url := pgtest.Shared(t).NewDatabase(t)
		if code, out, errOut := run(t, "", "migrate", "--database-url", url); code != 0 {
			t.Fatalf("migrate: exit %d %q %q", code, out, errOut)
		}
		holder, err := pgx.Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close(context.Background())
		if _, err := holder.Exec(t.Context(), `BEGIN; LOCK TABLE schema_migrations IN ACCESS EXCLUSIVE MODE`); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		errOut := &syncbuf.Buffer{}
		code := make(chan int, 1)
		go func() { code <- Main([]string{"migrate", "--database-url", url}, strings.NewReader(""), &out, errOut) }()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(errOut.String(), "migration waits") {
			if time.Now().After(deadline) {
				t.Fatalf("migrate behind a held table logged nothing in 10 s: %q", errOut.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := holder.Exec(t.Context(), `COMMIT`); err != nil {
			t.Fatal(err)
		}
		if c := <-code; c != 0 || !strings.Contains(out.String(), "migrations applied") {
			t.Fatalf("migrate after the table was freed: exit %d %q %q", c, out.String(), errOut.String())
		}
	})
}

func TestMasterKeySources(t *testing.T) {
	log := newTestLogger(t)
	t.Run("generated for the embedded store", func(t *testing.T) {
		dir := t.TempDir()
		cfg := storeConfig{dataDir: dir}
		if _, err := cfg.keyring(log); err != nil {
			t.Fatal(err)
		}
		info, err := os.Stat(filepath.Join(dir, "master.key"))
		if err != nil || info.Mode().Perm() != 0o600 {
			t.Fatalf("master.key: %v %v", info, err)
		}
	})
	t.Run("required with a database url", func(t *testing.T) {
		cfg := storeConfig{databaseURL: "postgres://127.0.0.1:1/x"}
		if _, err := cfg.keyring(log); err == nil || !strings.Contains(err.Error(), masterKeyEnv) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("bad environment value is not echoed", func(t *testing.T) {
		t.Setenv(masterKeyEnv, "not-a-valid-key-value")
		cfg := storeConfig{dataDir: t.TempDir()}
		_, err := cfg.keyring(log)
		if err == nil || strings.Contains(err.Error(), "not-a-valid-key-value") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("old keys from files and the environment open what they sealed", func(t *testing.T) {
		dir := t.TempDir()
		oldFile := filepath.Join(dir, "old.key")
		oldKey, _, err := secretbox.LoadOrCreateKeyFile(oldFile)
		if err != nil {
			t.Fatal(err)
		}
		envKey, _ := secretbox.NewKey()
		t.Setenv(oldMasterKeysEnv, " "+base64.StdEncoding.EncodeToString(envKey)+" ,")
		cfg := storeConfig{dataDir: dir, oldMasterKeyFiles: multiFlag{oldFile}}
		keyring, err := cfg.keyring(log)
		if err != nil {
			t.Fatal(err)
		}
		for _, key := range [][]byte{oldKey, envKey} {
			sealer, _ := secretbox.NewKeyring(key)
			keyID, sealed, _ := sealer.Seal("ep", "sec", []byte("material"))
			if keyID == keyring.CurrentKeyID() {
				t.Fatal("an old key became the current one")
			}
			if got, err := keyring.Open(keyID, "ep", "sec", sealed); err != nil || string(got) != "material" {
				t.Fatalf("old key %s does not open: %v", keyID, err)
			}
		}
		t.Setenv(oldMasterKeysEnv, "not-a-valid-key-value")
		if _, err := cfg.keyring(log); err == nil || strings.Contains(err.Error(), "not-a-valid-key-value") {
			t.Fatalf("bad old key: %v", err)
		}
	})
	t.Run("a bad old key generates no key file", func(t *testing.T) {
		t.Setenv(oldMasterKeysEnv, "not-a-valid-key-value")
		cfg := storeConfig{dataDir: t.TempDir()}
		if _, err := cfg.keyring(log); err == nil {
			t.Fatal("a bad old key was taken")
		}
		if _, err := os.Stat(filepath.Join(cfg.dataDir, "master.key")); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("a start refused for a bad old key left a generated master key behind (stat: %v)", err)
		}
	})
	t.Run("key file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "key")
		if _, _, err := secretbox.LoadOrCreateKeyFile(path); err != nil {
			t.Fatal(err)
		}
		cfg := storeConfig{databaseURL: "postgres://127.0.0.1:1/x", masterKeyFile: path}
		if _, err := cfg.keyring(log); err != nil {
			t.Fatal(err)
		}
	})
}

func newTestLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// acceptDeliveries creates the GitHub endpoint "gh" and has the server accept one delivery of
// the body {"zen":"x"} for each event id, into the inbox.
func acceptDeliveries(t *testing.T, must func(stdin string, args ...string) string, eventIDs ...string) {
	t.Helper()
	must("", "endpoint", "create", "--id", "gh", "--provider", "github")
	must("gh-secret", "secret", "add", "--endpoint", "gh")
	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"zen":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range eventIDs {
		h := signHeaders(t, "--provider", "github", "--secret", "gh-secret", "--body", bodyFile, "--id", id)
		must("", "verify", "--endpoint", "gh", "--body", bodyFile, "-H", "X-GitHub-Delivery: "+id, "-H", "X-Hub-Signature-256: "+h.Get("X-Hub-Signature-256"))
	}
}

func TestInboxCommands(t *testing.T) {
	remote, must := startTestServer(t)
	acceptDeliveries(t, must, "d-1", "d-2")
	if out := must("", "inbox", "stats"); !strings.Contains(out, `"pending": "2"`) {
		t.Fatalf("inbox stats:\n%s", out)
	}
	var leased struct {
		Deliveries []struct {
			InboxID    string `json:"inboxId"`
			LeaseToken string `json:"leaseToken"`
			EventID    string `json:"eventId"`
		} `json:"deliveries"`
	}
	out := must("", "inbox", "lease", "--max", "2", "--endpoint", "gh")
	if err := json.Unmarshal([]byte(out), &leased); err != nil || len(leased.Deliveries) != 2 || leased.Deliveries[0].EventID != "d-1" {
		t.Fatalf("inbox lease printed %s (%v)", out, err)
	}
	first, second := leased.Deliveries[0], leased.Deliveries[1]
	must("", "inbox", "ack", "--id", first.InboxID, "--lease", first.LeaseToken)
	if out := must("", "inbox", "nack", "--id", second.InboxID, "--lease", second.LeaseToken, "--retry-after", "0s", "--error", "try later"); strings.Contains(out, "deadLettered") {
		t.Fatalf("first nack dead-lettered: %s", out)
	}
	if out := must("", "inbox", "dead"); strings.Contains(out, "inboxId") {
		t.Fatalf("dead letters after one nack: %s", out)
	}
	if code, _, errOut := run(t, "", "inbox", "ack", "--id", first.InboxID); code != 2 || !strings.Contains(errOut, "--lease") {
		t.Fatalf("ack without --lease: exit %d %q", code, errOut)
	}

	// The worker runs a command per delivery with the operation key in its environment and the
	// raw body on stdin, and acks it; the nacked d-2 is leasable again at once.
	code, out, errOut := run(t, "", append(append([]string{"worker", "--once", "--endpoint", "gh"}, remote...),
		"--", "sh", "-c", `printf '%s %s ' "$HOOKVERIFY_EVENT_ID" "$HOOKVERIFY_OPERATION_KEY"; cat`)...)
	if code != 0 || !strings.Contains(out, "d-2 op_") || !strings.Contains(out, `{"zen":"x"}`) {
		t.Fatalf("worker: exit %d, output %q, stderr %q", code, out, errOut)
	}
	if out := must("", "inbox", "stats"); strings.Contains(out, `"pending"`) || strings.Contains(out, `"leased"`) {
		t.Fatalf("after the worker, inbox stats:\n%s", out)
	}
}

// TestInboxAckMany acks a whole lease at once: the JSON `inbox lease` printed, piped into
// `inbox ack --leased -`, and repeated --id/--lease pairs, in calls of at most 100.
func TestInboxAckMany(t *testing.T) {
	remote, must := startTestServer(t)
	acceptDeliveries(t, must, "d-1", "d-2", "d-3")
	leased := must("", "inbox", "lease", "--max", "3", "--endpoint", "gh")
	var results struct {
		Results []struct {
			InboxID string `json:"inboxId"`
			Code    int    `json:"code"`
		} `json:"results"`
	}
	out := must(leased, "inbox", "ack", "--leased", "-")
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results.Results) != 3 {
		t.Fatalf("inbox ack --leased printed %s (%v)", out, err)
	}
	for _, r := range results.Results {
		if r.Code != 0 || !strings.Contains(leased, r.InboxID) {
			t.Errorf("result %+v, want code 0 for a leased delivery", r)
		}
	}
	if out := must("", "inbox", "stats"); strings.Contains(out, `"pending"`) || strings.Contains(out, `"leased"`) {
		t.Fatalf("after acking the lease, inbox stats:\n%s", out)
	}

	// The same acks again (a script re-running them after a timeout): every delivery was
	// acked, each result says so, and the command succeeds, the work being done.
	code, out, errOut := run(t, leased, append([]string{"inbox", "ack", "--leased", "-"}, remote...)...)
	if code != 0 || !strings.Contains(errOut, "3 of 3 were already acked") || strings.Count(out, `"code": 9`) != 3 || strings.Count(out, `"alreadyAcked": true`) != 3 {
		t.Errorf("acking acked deliveries again: exit %d, stderr %q, output:\n%s", code, errOut, out)
	}
	var one struct {
		Deliveries []struct {
			InboxID    string `json:"inboxId"`
			LeaseToken string `json:"leaseToken"`
		} `json:"deliveries"`
	}
	if err := json.Unmarshal([]byte(leased), &one); err != nil || len(one.Deliveries) == 0 {
		t.Fatalf("lease printed %s (%v)", leased, err)
	}
	code, _, errOut = run(t, "", append([]string{"inbox", "ack", "--id", one.Deliveries[0].InboxID, "--lease", one.Deliveries[0].LeaseToken}, remote...)...)
	if code != 0 || !strings.Contains(errOut, "already acked") {
		t.Errorf("one ack of an acked delivery again: exit %d, stderr %q", code, errOut)
	}
	// More than one call's worth of pairs: split into calls the server takes (it refuses more
	// than 100 in one), every result kept. Unknown ids are each NOT_FOUND.
	args := []string{"inbox", "ack"}
	for i := range maxAcksPerCall + 3 {
		args = append(args, "--id", fmt.Sprintf("no-such-%d", i), "--lease", "token")
	}
	code, out, errOut = run(t, "", append(args, remote...)...)
	if code != 1 || !strings.Contains(errOut, "103 of 103 acks failed") || strings.Count(out, `"code": 5`) != 103 {
		t.Errorf("acking 103 unknown deliveries: exit %d, stderr %q, %d NOT_FOUND results", code, errOut, strings.Count(out, `"code": 5`))
	}

	// Usage mistakes exit 2, a --leased file unfit to ack exits 1, an empty lease is nothing to
	// do (exit 0, said on standard error).
	for _, c := range []struct {
		stdin    string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"", []string{"--id", "a"}, 2, "1 --id but 0 --lease"},
		{"", []string{"--id", "a", "--lease", ""}, 2, "must not be empty"},
		{"", nil, 2, "--id and --lease are required"},
		{`{}`, []string{"--leased", "-"}, 0, "holds no deliveries"},
		{`not json`, []string{"--leased", "-"}, 1, "is not the JSON 'inbox lease' prints"},
		{`{"deliveries": [{"inboxId": "x"}]}`, []string{"--leased", "-"}, 1, "without an inbox id or lease token"},
	} {
		code, _, errOut := run(t, c.stdin, append(append([]string{"inbox", "ack"}, c.args...), remote...)...)
		if code != c.wantCode || !strings.Contains(errOut, c.wantErr) {
			t.Errorf("inbox ack %q (stdin %q): exit %d, stderr %q, want %d and %q", c.args, c.stdin, code, errOut, c.wantCode, c.wantErr)
		}
	}
}

func TestBenchCommand(t *testing.T) {
	remote, _ := startTestServer(t)
	code, out, errOut := run(t, "", append([]string{"bench", "--duration", "300ms", "--workers", "4", "--baseline", "--mix", "new=60,dup=30,forged=10", "--drain", "2"}, remote...)...)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errOut)
	}
	for _, want := range []string{"noop", "accepted", "duplicate", "rejected", "ratio to the no-op gRPC baseline", "ack-many", "inbox after the phase: "} {
		if !strings.Contains(out, want) {
			t.Errorf("bench output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "error:") {
		t.Errorf("bench saw errors:\n%s", out)
	}
	wantDrained(t, out)
	// With --ack-each, the drain workers ack one call per delivery.
	code, out, errOut = run(t, "", append([]string{"bench", "--duration", "300ms", "--workers", "2", "--mix", "new=100", "--drain", "2", "--ack-each"}, remote...)...)
	if code != 0 || !hasRow(out, "ack") || hasRow(out, "ack-many") || strings.Contains(out, "error:") {
		t.Errorf("bench --ack-each exited %d (%s), output:\n%s", code, errOut, out)
	}
	// Every new event is new, and its signature holds (newEventFrom).
	if !hasRow(out, "accepted") || hasRow(out, "duplicate") || hasRow(out, "rejected") {
		t.Errorf("bench --mix new=100: verdicts other than accepted:\n%s", out)
	}
	wantDrained(t, out)
	// Numbered event ids, as before the eleventh session: every one new as well.
	code, out, errOut = run(t, "", append([]string{"bench", "--duration", "300ms", "--workers", "2", "--mix", "new=100", "--sequential-event-ids"}, remote...)...)
	if code != 0 || !hasRow(out, "accepted") || hasRow(out, "duplicate") || hasRow(out, "rejected") {
		t.Errorf("bench --sequential-event-ids exited %d (%s), output:\n%s", code, errOut, out)
	}
	if code, _, _ := run(t, "", "bench", "--mix", "new=0"); code != 2 {
		t.Errorf("bench with an all-zero mix: exit %d, want 2 (usage)", code)
	}
	if code, _, _ := run(t, "", "bench", "--lease-size", "101"); code != 2 {
		t.Errorf("bench with --lease-size 101: exit %d, want 2 (usage)", code)
	}
}

// hasRow reports whether the bench's output has a row for label.
func hasRow(out, label string) bool {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == label {
			return true
		}
	}
	return false
}

// wantDrained checks the bench's drain line: some deliveries acked, and no more than were
// accepted (during the phase, and the 64 the bench primes before it for redeliveries).
func wantDrained(t *testing.T, out string) {
	t.Helper()
	var acked, accepted int
	var rate float64
	if i := strings.Index(out, "drained: "); i < 0 {
		t.Errorf("no drained line:\n%s", out)
		return
	} else if _, err := fmt.Sscanf(out[i:], "drained: %d deliveries acked, %f/s", &acked, &rate); err != nil {
		t.Errorf("drained line: %v:\n%s", err, out)
		return
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "accepted" && accepted == 0 {
			accepted, _ = strconv.Atoi(f[1]) // the results row, before the ratios
		}
	}
	if acked < 1 || acked > accepted+64 || rate <= 0 {
		t.Errorf("drained %d (%.0f/s) of %d accepted:\n%s", acked, rate, accepted, out)
	}
}

// startServerWithConfig serves cfg's store with cfg's master keys, as `serve` would, until the
// returned stop is called (or the test ends).
func startServerWithConfig(t *testing.T, cfg *storeConfig) (must func(stdin string, args ...string) string, stop func()) {
	t.Helper()
	keyring, err := cfg.keyring(newTestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	return serveForTest(t, cfg, keyring, serveConfig{listen: "127.0.0.1:0", cacheTTL: server.DefaultCacheTTL,
		claimCacheSize: server.DefaultClaimCacheSize, claimCacheTTL: server.DefaultClaimCacheTTL})
}

// serveForTest serves cfg's store with keyring and the serve settings sc, as `serve` would,
// until the returned stop is called (or the test ends); must runs a CLI command against it.
func serveForTest(t *testing.T, cfg *storeConfig, keyring *secretbox.Keyring, sc serveConfig) (must func(stdin string, args ...string) string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := startServerWith(ctx, newTestLogger(t), sc, keyring, cfg.openStore)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			srv.stop()
			cancel()
		}
	}
	t.Cleanup(stop)
	if err := srv.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	must = func(stdin string, args ...string) string {
		t.Helper()
		code, out, errOut := run(t, stdin, append(args, "--server", srv.addr)...)
		if code != 0 {
			t.Fatalf("%q exited %d: %s", args, code, errOut)
		}
		return out
	}
	return must, stop
}

// TestMasterKeyRotationRunbook follows the README's runbook with the CLI: restart with the new
// key and the old one, rekey while serving, then run on the new key alone.
func TestMasterKeyRotationRunbook(t *testing.T) {
	dir := t.TempDir()
	oldKeyFile, newKeyFile := filepath.Join(dir, "old.key"), filepath.Join(dir, "new.key")
	for _, f := range []string{oldKeyFile, newKeyFile} {
		if _, _, err := secretbox.LoadOrCreateKeyFile(f); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &storeConfig{dataDir: filepath.Join(dir, "data"), masterKeyFile: oldKeyFile}
	must, stop := startServerWithConfig(t, cfg)
	const secret = "whsec_runbook_secret"
	must("", "endpoint", "create", "--id", "rb", "--provider", "stripe")
	must(secret, "secret", "add", "--endpoint", "rb")
	must("", "endpoint", "create", "--id", "elsewhere", "--provider", "github")
	must("github_runbook_secret", "secret", "add", "--endpoint", "elsewhere")
	var listed struct {
		Secrets []struct{ Fingerprint, MasterKeyID string } `json:"secrets"`
	}
	if err := json.Unmarshal([]byte(must("", "secret", "list", "--endpoint", "rb")), &listed); err != nil || len(listed.Secrets) != 1 {
		t.Fatalf("secret list: %+v %v", listed, err)
	}
	code, fingerprint, errOut := run(t, secret+"\n", "secret", "fingerprint", "--endpoint", "rb")
	if code != 0 || strings.TrimSpace(fingerprint) != listed.Secrets[0].Fingerprint {
		t.Fatalf("secret fingerprint = %q (exit %d, %s), secret list shows %q", fingerprint, code, errOut, listed.Secrets[0].Fingerprint)
	}
	stop()

	// Step 1: the new key is current, the old one still opens.
	cfg.masterKeyFile, cfg.oldMasterKeyFiles = newKeyFile, multiFlag{oldKeyFile}
	must, stop = startServerWithConfig(t, cfg)
	// Step 2: rekey while serving, a secret per call: two calls, their counts summed.
	if out := must("", "rekey", "--page", "1"); !strings.Contains(out, `"resealed": 2`) {
		t.Fatalf("rekey printed:\n%s", out)
	}
	if out := must("", "audit", "--endpoint", "rb", "--since", "1h"); !strings.Contains(out, `"secret.rekey"`) ||
		!strings.Contains(out, `"secret.add"`) || !strings.Contains(out, `"actor": "local"`) {
		t.Fatalf("audit printed:\n%s", out)
	}
	// The filters exclude too: another endpoint's events, and everything before --until.
	if out := must("", "audit", "--endpoint", "rb"); strings.Contains(out, `"elsewhere"`) {
		t.Fatalf("audit --endpoint rb shows another endpoint's events:\n%s", out)
	}
	if out := must("", "audit"); !strings.Contains(out, `"elsewhere"`) {
		t.Fatalf("audit without filters lacks the other endpoint's creation:\n%s", out)
	}
	if out := must("", "audit", "--until", "1h"); strings.Contains(out, `"action"`) {
		t.Fatalf("audit --until 1h (an hour ago) shows events:\n%s", out)
	}
	stop()

	// Step 3: the old key goes; every secret still verifies.
	cfg.oldMasterKeyFiles = nil
	must, _ = startServerWithConfig(t, cfg)
	bodyFile := filepath.Join(dir, "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"id":"evt_runbook"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := signHeaders(t, "--provider", "stripe", "--secret", secret, "--body", bodyFile)
	if out := must("", "verify", "--endpoint", "rb", "--body", bodyFile, "-H", "Stripe-Signature: "+h.Get("Stripe-Signature")); !strings.Contains(out, "VERDICT_ACCEPTED") {
		t.Fatalf("verify after the rotation:\n%s", out)
	}
}

func TestGCPercentToSet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		gogc    string
		want    int
		wantErr bool
	}{
		{"Go's own by default", nil, "", 0, false},
		{"GOGC in the environment is left alone", nil, "150", 0, false},
		{"the flag wins over GOGC", []string{"--gc-percent", "200"}, "150", 200, false},
		{"the flag alone", []string{"--gc-percent", "100"}, "", 100, false},
		{"zero is refused", []string{"--gc-percent", "0"}, "", 0, true},
		{"negative is refused", []string{"--gc-percent", "-1"}, "", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			fs := flag.NewFlagSet("serve", flag.ContinueOnError)
			var sc serveConfig
			sc.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := gcPercentToSet(fs, sc.gcPercent)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("gcPercentToSet = %d, %v; want %d, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestCacheFlagsToOptions checks that zero on the command line turns a cache off, where zero in
// server.Options would mean the default.
func TestCacheFlagsToOptions(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	var sc serveConfig
	sc.register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if sc.claimCacheSize != server.DefaultClaimCacheSize || sc.claimCacheTTL != server.DefaultClaimCacheTTL || sc.cacheTTL != server.DefaultCacheTTL {
		t.Errorf("defaults: claim cache %d, %v; endpoint cache %v", sc.claimCacheSize, sc.claimCacheTTL, sc.cacheTTL)
	}
	if offWhenZero(sc.claimCacheSize) != server.DefaultClaimCacheSize || offWhenZero(sc.cacheTTL) != server.DefaultCacheTTL {
		t.Error("a flag left at its default does not reach the options unchanged")
	}
	if err := fs.Parse([]string{"--claim-cache", "0", "--claim-cache-ttl", "0", "--cache-ttl", "0"}); err != nil {
		t.Fatal(err)
	}
	if offWhenZero(sc.claimCacheSize) >= 0 || offWhenZero(sc.claimCacheTTL) >= 0 || offWhenZero(sc.cacheTTL) >= 0 {
		t.Error("a flag of zero does not turn its cache off (a negative option)")
	}
}

// TestNewEventFrom: each new event is the template with its own id in the one header that
// carried the template's, and the template is left as it was.
func TestRandomEventID(t *testing.T) {
	shape := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	// Two workers' generators, seeded as drive seeds them: no id twice within or across them.
	for w := range 2 {
		r := mrand.New(mrand.NewPCG(uint64(w), 42))
		for range 5000 {
			id := randomEventID(r)
			if !shape.MatchString(id) {
				t.Fatalf("event id %q is not shaped like a GUID", id)
			}
			if seen[id] {
				t.Fatalf("event id %q made twice", id)
			}
			seen[id] = true
		}
	}
}

func TestNewEventFrom(t *testing.T) {
	template := &hookverifyv1.VerifyRequest{EndpointId: "ep", Body: []byte("{}"), Method: "POST", Url: "https://x/ep",
		Headers: []*hookverifyv1.HeaderField{{Name: "X-Hub-Signature-256", Value: "sha256=00"}, {Name: "X-GitHub-Delivery", Value: benchTemplateEventID}}}
	newEvent, err := newEventFrom(template)
	if err != nil {
		t.Fatal(err)
	}
	a, b := newEvent("evt-1"), newEvent("evt-2")
	for _, c := range []struct {
		req  *hookverifyv1.VerifyRequest
		want string
	}{{a, "evt-1"}, {b, "evt-2"}, {template, benchTemplateEventID}} {
		if got := c.req.GetHeaders()[1]; got.GetName() != "X-GitHub-Delivery" || got.GetValue() != c.want {
			t.Errorf("event id header %v, want %s", got, c.want)
		}
		if c.req.GetHeaders()[0].GetValue() != "sha256=00" || c.req.GetEndpointId() != "ep" || c.req.GetUrl() != "https://x/ep" ||
			string(c.req.GetBody()) != "{}" || c.req.GetMethod() != "POST" {
			t.Errorf("request %v differs from the template beyond its id", c.req)
		}
	}
	template.Headers[0].Value = benchTemplateEventID
	if _, err := newEventFrom(template); err == nil {
		t.Error("two headers carry the template id: no error")
	}
	if _, err := newEventFrom(&hookverifyv1.VerifyRequest{}); err == nil {
		t.Error("no header carries the template id: no error")
	}
}

// abortingAdmin answers UpdateEndpoint ABORTED the first time, as the server does when the
// endpoint changed since the read the update was made from, and records each call.
type abortingAdmin struct {
	hookverifyv1.UnimplementedAdminServiceServer
	mu      sync.Mutex
	reads   int
	updates []*hookverifyv1.Endpoint
}

func (a *abortingAdmin) GetEndpoint(_ context.Context, req *hookverifyv1.GetEndpointRequest) (*hookverifyv1.GetEndpointResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.reads++
	// The second read sees the other admin's change: an option set meanwhile.
	ep := &hookverifyv1.Endpoint{Id: req.GetId(), Provider: "github", UpdateTime: timestamppb.New(time.Unix(int64(a.reads), 0))}
	if a.reads > 1 {
		ep.Options = map[string]string{"set": "meanwhile"}
	}
	return &hookverifyv1.GetEndpointResponse{Endpoint: ep}, nil
}

func (a *abortingAdmin) UpdateEndpoint(_ context.Context, req *hookverifyv1.UpdateEndpointRequest) (*hookverifyv1.UpdateEndpointResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.updates = append(a.updates, req.GetEndpoint())
	if len(a.updates) == 1 {
		return nil, status.Error(codes.Aborted, "endpoint changed since the read")
	}
	return &hookverifyv1.UpdateEndpointResponse{Endpoint: req.GetEndpoint()}, nil
}

// TestEndpointUpdateRereadsAfterAConcurrentChange: when another update lands between the CLI's
// read and its write (ABORTED), the CLI reads again and reapplies its flags, keeping the other
// change instead of undoing it.
func TestEndpointUpdateRereadsAfterAConcurrentChange(t *testing.T) {
	a := &abortingAdmin{}
	remote := serveFake(t, func(g *grpc.Server) { hookverifyv1.RegisterAdminServiceServer(g, a) })
	if code, _, errOut := run(t, "", append([]string{"endpoint", "update", "--id", "gh", "--disabled"}, remote...)...); code != 0 {
		t.Fatalf("endpoint update: exit %d, %q", code, errOut)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reads != 2 || len(a.updates) != 2 {
		t.Fatalf("%d reads and %d updates, want 2 of each (read again after ABORTED)", a.reads, len(a.updates))
	}
	last := a.updates[1]
	if !last.GetDisabled() || last.GetOptions()["set"] != "meanwhile" || last.GetUpdateTime().AsTime().Unix() != 2 {
		t.Errorf("second update %v: want the flag applied to the second read, its option and update_time kept", last)
	}
}

// TestInboxExtendKeepsALeaseAlive: an operator who leased a delivery with `inbox lease` and
// needs longer than its visibility timeout must be able to extend the lease (ExtendLease), or
// the delivery goes to another worker while the work is still being done and is done twice.
func TestInboxExtendKeepsALeaseAlive(t *testing.T) {
	remote, must := startTestServer(t)
	acceptDeliveries(t, must, "x-1")
	var leased struct {
		Deliveries []struct {
			InboxID     string    `json:"inboxId"`
			LeaseToken  string    `json:"leaseToken"`
			LeasedUntil time.Time `json:"leasedUntil"`
		} `json:"deliveries"`
	}
	if err := json.Unmarshal([]byte(must("", "inbox", "lease", "--visibility", "5s")), &leased); err != nil || len(leased.Deliveries) != 1 {
		t.Fatalf("inbox lease: %v", err)
	}
	d := leased.Deliveries[0]
	code, out, errOut := run(t, "", append([]string{"inbox", "extend", "--id", d.InboxID, "--lease", d.LeaseToken, "--visibility", "10m"}, remote...)...)
	if code != 0 {
		t.Fatalf("inbox extend: exit %d, stderr %q", code, errOut)
	}
	var ext struct {
		LeasedUntil time.Time `json:"leasedUntil"`
	}
	if err := json.Unmarshal([]byte(out), &ext); err != nil || ext.LeasedUntil.Before(d.LeasedUntil.Add(5*time.Minute)) {
		t.Fatalf("inbox extend printed %s (%v); want leasedUntil about 10 minutes ahead", out, err)
	}
	// Mistakes: no lease token (usage, naming the flag), a lost lease (exit 1), a visibility the
	// server would refuse (usage, naming the flag).
	if code, _, errOut := run(t, "", append([]string{"inbox", "extend", "--id", d.InboxID}, remote...)...); code != 2 || !strings.Contains(errOut, "--lease") {
		t.Errorf("extend without --lease: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, "", append([]string{"inbox", "extend", "--id", d.InboxID, "--lease", "lease_wrong"}, remote...)...); code != 1 || !strings.Contains(errOut, "FailedPrecondition") {
		t.Errorf("extend with a wrong lease: exit %d %q", code, errOut)
	}
	if code, _, errOut := run(t, "", append([]string{"inbox", "extend", "--id", d.InboxID, "--lease", d.LeaseToken, "--visibility", "13h"}, remote...)...); code != 2 || !strings.Contains(errOut, "--visibility") {
		t.Errorf("extend --visibility 13h: exit %d %q", code, errOut)
	}
}

// TestTokenFromEnvironmentIsTrimmedLikeTheFile: a token in $HOOKVERIFY_TOKEN with a trailing
// newline (a Kubernetes secret made from a file, an env file) works as it does in --token-file,
// rather than being refused as "not printable ASCII" without saying where it came from.
func TestTokenFromEnvironmentIsTrimmedLikeTheFile(t *testing.T) {
	t.Setenv(tokenEnv, "hvt_abc\n")
	if got, err := readToken(""); err != nil || got != "hvt_abc" {
		t.Errorf("readToken with $%s=%q: %q, %v", tokenEnv, "hvt_abc\n", got, err)
	}
}

// TestEmptyTokenFileIsAnError: --token-file naming an empty file (a secret not mounted yet, a
// provisioning step that failed) is an error naming the file, not a silent call without a
// token that the server answers with a bare Unauthenticated.
func TestEmptyTokenFileIsAnError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "", "endpoint", "list", "--server", "127.0.0.1:1", "--token-file", file)
	if code != 1 || !strings.Contains(errOut, "--token-file") || !strings.Contains(errOut, "empty") {
		t.Errorf("empty --token-file: exit %d, stderr %q", code, errOut)
	}
}

// TestInboxDurationsOutOfRangeAreUsageErrors: `inbox lease --visibility` and `inbox nack
// --retry-after` outside what the server takes are refused before any call, naming the flag,
// as `inbox lease --max` and the worker's flags are, rather than as the server's field names.
func TestInboxDurationsOutOfRangeAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"inbox", "lease", "--visibility", "13h"},
		{"inbox", "lease", "--visibility", "-5s"},
		{"inbox", "nack", "--id", "i", "--lease", "l", "--retry-after", "-1m"},
	} {
		code, _, errOut := run(t, "", append(args, "--server", "127.0.0.1:1")...)
		if flagName := args[len(args)-2]; code != 2 || !strings.Contains(errOut, flagName) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %s", args, code, errOut, flagName)
		}
	}
}

// TestHelpExitsZero: asking a command for its help is not a usage mistake; it exits 0 like
// "hookverify -h", so that `hookverify secret add -h && ...` or a help check in CI works.
// Mistakes still exit 2.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"secret", "add", "-h"}, {"inbox", "lease", "--help"}, {"sign", "-h"}, {"audit", "-h"}, {"inbox", "-h"}, {"token", "help"}, {"worker", "-h"}} {
		if code, _, errOut := run(t, "", args...); code != 0 || !strings.Contains(errOut, "sage") {
			t.Errorf("%q: exit %d, stderr %q; want 0 and the usage", args, code, errOut)
		}
	}
	for _, args := range [][]string{{"secret", "add", "--bogus"}, {"inbox", "frob"}, {"inbox"}} {
		if code, _, _ := run(t, "", args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
}

// TestEndpointUpdateHelpSaysUnchanged: endpoint update changes only the flags given, so its
// help must not show create's defaults ("0: the provider's default", "default: the id") as if
// leaving a flag out set them, and it offers no flag for what cannot change after creation.
func TestEndpointUpdateHelpSaysUnchanged(t *testing.T) {
	_, _, help := run(t, "", "endpoint", "update", "-h")
	// Each flag's block of the help: its name, then its text up to the next flag.
	blocks := map[string]string{}
	for _, block := range strings.Split(help, "\n  -")[1:] {
		name, _, _ := strings.Cut(block, " ")
		name, _, _ = strings.Cut(name, "\n")
		blocks["-"+name] = block
	}
	for _, flag := range []string{"-tolerance", "-max-body-bytes", "-disabled", "-option"} {
		if block, ok := blocks[flag]; !ok {
			t.Errorf("no %s in the help:\n%s", flag, help)
		} else if !strings.Contains(block, "unchanged") {
			t.Errorf("%s's help does not say a flag left out keeps the stored value: %q", flag, block)
		}
	}
	for _, fixed := range []string{"-provider", "-dedupe-scope"} {
		if _, ok := blocks[fixed]; ok {
			t.Errorf("endpoint update offers %s, which the server refuses to change:\n%s", fixed, help)
		}
		if code, _, errOut := run(t, "", "endpoint", "update", "--id", "x", fixed, "y"); code != 2 || !strings.Contains(errOut, fixed) {
			t.Errorf("endpoint update %s: exit %d, stderr %q; want 2 naming it", fixed, code, errOut)
		}
	}
}

// TestZeroTimeoutNamesTheFlag: `--timeout 0` (which an operator may take for "no deadline")
// is refused naming the flag, rather than every call failing with a bare DeadlineExceeded
// that reads like a slow or unreachable server.
func TestZeroTimeoutNamesTheFlag(t *testing.T) {
	for _, timeout := range []string{"0", "-1s"} {
		code, _, errOut := run(t, "", "endpoint", "list", "--server", "127.0.0.1:1", "--timeout", timeout)
		if code != 2 || !strings.Contains(errOut, "--timeout") {
			t.Errorf("--timeout %s: exit %d, stderr %q", timeout, code, errOut)
		}
	}
}

// TestAuditSaysWhenThereMayBeMore: audit lists oldest first, so a full page leaves out the
// latest actions; it says so on standard error (stdout stays the JSON). A --limit outside
// 1-1000 is a usage error naming the flag, not the server's page_size, and a --since the flag
// cannot read names both forms it takes.
func TestAuditSaysWhenThereMayBeMore(t *testing.T) {
	remote, must := startTestServer(t)
	for _, id := range []string{"a1", "a2", "a3"} {
		must("", "endpoint", "create", "--id", id, "--provider", "github")
	}
	code, out, errOut := run(t, "", append([]string{"audit", "--limit", "2"}, remote...)...)
	if code != 0 || strings.Count(out, `"action"`) != 2 || !strings.Contains(errOut, "later") {
		t.Errorf("audit --limit 2 of 3: exit %d, stdout %s, stderr %q", code, out, errOut)
	}
	if code, _, errOut := run(t, "", append([]string{"audit", "--limit", "10"}, remote...)...); code != 0 || errOut != "" {
		t.Errorf("audit --limit 10 of 3: exit %d, stderr %q", code, errOut)
	}
	for _, limit := range []string{"0", "1001", "-1"} {
		if code, _, errOut := run(t, "", append([]string{"audit", "--limit", limit}, remote...)...); code != 2 || !strings.Contains(errOut, "--limit") {
			t.Errorf("audit --limit %s: exit %d, stderr %q", limit, code, errOut)
		}
	}
	if code, _, errOut := run(t, "", append([]string{"audit", "--since", "1d"}, remote...)...); code != 2 || !strings.Contains(errOut, "24h") {
		t.Errorf("audit --since 1d: exit %d, stderr %q", code, errOut)
	}
}

// TestRekeyAdviceOnUnreadableSecrets: when rekey meets a secret in force sealed under a master
// key the server does not hold, it fails with advice that works: give the server that key, or,
// if it is lost, replace and retire the secret. Once retired, the secret can never
// authenticate again: rekey lists it as ended and succeeds, rather than fail for ever over a
// secret nothing can reseal or delete.
func TestRekeyAdviceOnUnreadableSecrets(t *testing.T) {
	dir := t.TempDir()
	keys := map[string]string{}
	for _, name := range []string{"lost", "old", "new"} {
		keys[name] = filepath.Join(dir, name+".key")
		if _, _, err := secretbox.LoadOrCreateKeyFile(keys[name]); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &storeConfig{dataDir: filepath.Join(dir, "data"), masterKeyFile: keys["lost"]}
	must, stop := startServerWithConfig(t, cfg)
	must("", "endpoint", "create", "--id", "rb", "--provider", "stripe")
	var added struct{ Secret struct{ ID string } }
	if err := json.Unmarshal([]byte(must("whsec_sealed_under_a_lost_key", "secret", "add", "--endpoint", "rb")), &added); err != nil {
		t.Fatal(err)
	}
	stop()

	cfg.masterKeyFile, cfg.oldMasterKeyFiles = keys["new"], multiFlag{keys["old"]}
	keyring, err := cfg.keyring(newTestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := startServerWith(ctx, newTestLogger(t), serveConfig{listen: "127.0.0.1:0", cacheTTL: server.DefaultCacheTTL,
		claimCacheSize: server.DefaultClaimCacheSize, claimCacheTTL: server.DefaultClaimCacheTTL}, keyring, cfg.openStore)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	if err := srv.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "", "rekey", "--server", srv.addr)
	if code != 1 || !strings.Contains(out, added.Secret.ID) {
		t.Fatalf("rekey with a secret in force under a key the server lacks: exit %d, stdout %s, stderr %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "--old-master-key-file") || !strings.Contains(errOut, "retire") {
		t.Errorf("rekey does not say how to give the server the key, or what to do if it is lost: %s", errOut)
	}

	if code, _, errOut := run(t, "", "secret", "retire", "--endpoint", "rb", "--id", added.Secret.ID, "--server", srv.addr); code != 0 {
		t.Fatalf("secret retire: exit %d, %s", code, errOut)
	}
	code, out, errOut = run(t, "", "rekey", "--server", srv.addr)
	var answer struct{ EndedUnreadableSecretIds, UnreadableSecretIds []string }
	if err := json.Unmarshal([]byte(out), &answer); err != nil || code != 0 {
		t.Fatalf("rekey with only a retired secret under a key the server lacks: exit %d (%v), stdout %s, stderr %s", code, err, out, errOut)
	}
	if !slices.Equal(answer.EndedUnreadableSecretIds, []string{added.Secret.ID}) || len(answer.UnreadableSecretIds) != 0 || !strings.Contains(errOut, "need nothing") {
		t.Errorf("rekey does not list the retired secret as ended and harmless: stdout %s, stderr %s", out, errOut)
	}
}
