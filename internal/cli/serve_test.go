package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	_ "modernc.org/sqlite"

	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/secretbox"
	"github.com/hookverify/hookverify/storage"
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
	var out syncbuf.Buffer
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
	var out syncbuf.Buffer
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

// TestStopIsNotHeldByHealthWatchers: a client watching health (grpc.health.v1.Health/Watch,
// what gRPC client-side health checking and several balancers use) keeps a stream open for as
// long as it watches. Shutdown reports NOT_SERVING to it, and the graceful stop must then end
// the watch, rather than wait for it until the drain bound and cut off every call still
// running then.
func TestStopIsNotHeldByHealthWatchers(t *testing.T) {
	r := startServerWrapping(t, storeConfig{dataDir: t.TempDir()}, func(st storage.Store) storage.Store { return st })
	watch, err := healthpb.NewHealthClient(dialPlain(t, r.addr)).Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := watch.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("first watch answer %v, %v; want SERVING", m, err)
	}
	start := time.Now()
	r.stop()
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("stop took %v with a health watcher connected", took.Round(time.Millisecond))
	}
	// The watcher heard NOT_SERVING before its watch ended.
	var last healthpb.HealthCheckResponse_ServingStatus
	for {
		m, err := watch.Recv()
		if err != nil {
			break
		}
		last = m.GetStatus()
	}
	if last != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("the watcher's last status was %v, want NOT_SERVING", last)
	}
}

// claimHoldingStore holds every Claim until release is closed, and says when the first one
// arrives: a Verify call under way, its claim not yet committed.
type claimHoldingStore struct {
	storage.Store
	entered chan struct{}
	release chan struct{}
}

func (h *claimHoldingStore) Claim(ctx context.Context, d storage.Delivery) (storage.ClaimResult, error) {
	select {
	case h.entered <- struct{}{}:
	default:
	}
	<-h.release
	return h.Store.Claim(ctx, d)
}

// startServerWrapping starts serve on cfg's store wrapped by wrap, and waits until it is ready.
func startServerWrapping(t *testing.T, cfg storeConfig, wrap func(storage.Store) storage.Store) *runningServer {
	t.Helper()
	r, err := startServer(t.Context(), newTestLogger(t), "127.0.0.1:0", testpki.Keyring(t), func(ctx context.Context) (storage.Store, error) {
		st, err := cfg.openStore(ctx)
		if err != nil {
			return nil, err
		}
		return wrap(st), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	return r
}

// startHoldingServer starts serve on a store whose claims wait until the returned store's
// release is closed.
func startHoldingServer(t *testing.T, cfg storeConfig) (*runningServer, *claimHoldingStore) {
	t.Helper()
	held := &claimHoldingStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	return startServerWrapping(t, cfg, func(st storage.Store) storage.Store { held.Store = st; return held }), held
}

// githubDeliveries creates the GitHub endpoint "gh" (secret "gh-secret") through conn, and
// returns a maker of its signed deliveries, one event per id.
func githubDeliveries(t *testing.T, conn *grpc.ClientConn) func(id string) *hookverifyv1.VerifyRequest {
	t.Helper()
	admin := hookverifyv1.NewAdminServiceClient(conn)
	if _, err := admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "gh", Provider: "github"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "gh", Secret: "gh-secret"}); err != nil {
		t.Fatal(err)
	}
	return func(id string) *hookverifyv1.VerifyRequest {
		body := []byte(`{"zen":"` + id + `"}`)
		mac := hmac.New(sha256.New, []byte("gh-secret"))
		mac.Write(body)
		return &hookverifyv1.VerifyRequest{EndpointId: "gh", Body: body, Method: "POST", Url: "https://example.com/hook",
			Headers: []*hookverifyv1.HeaderField{{Name: "X-GitHub-Delivery", Value: id}, {Name: "X-Hub-Signature-256", Value: "sha256=" + hex.EncodeToString(mac.Sum(nil))}}}
	}
}

// dialPlain connects to addr without TLS, closed at the end of the test.
func dialPlain(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestSecretUseOfCallsDrainedAtShutdownIsWritten: a Verify call under way at SIGTERM is let
// finish, and the secret that authenticated it was used. stop ended the secret-use writer
// (its last flush) before the drain, so the uses of every call drained were noted after the
// last write and lost: an old secret whose last deliveries came during a restart showed an
// older last_used_time, which the rotation runbook reads to decide it is quiet.
func TestSecretUseOfCallsDrainedAtShutdownIsWritten(t *testing.T) {
	cfg := storeConfig{dataDir: t.TempDir()}
	r, held := startHoldingServer(t, cfg)
	must := func(stdin string, args ...string) {
		t.Helper()
		if code, _, errOut := run(t, stdin, append(args, "--server", r.addr)...); code != 0 {
			t.Fatalf("%q exited %d: %s", args, code, errOut)
		}
	}
	must("", "endpoint", "create", "--id", "gh", "--provider", "github")
	must("gh-secret", "secret", "add", "--endpoint", "gh")
	bodyFile := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(bodyFile, []byte(`{"zen":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := signHeaders(t, "--provider", "github", "--secret", "gh-secret", "--body", bodyFile, "--id", "d-1")
	verified := make(chan string, 1)
	go func() {
		code, out, errOut := run(t, "", "verify", "--endpoint", "gh", "--body", bodyFile, "--server", r.addr,
			"-H", "X-GitHub-Delivery: d-1", "-H", "X-Hub-Signature-256: "+h.Get("X-Hub-Signature-256"))
		verified <- fmt.Sprintf("exit %d: %s%s", code, out, errOut)
	}()
	<-held.entered
	stopped := make(chan struct{})
	go func() { r.stop(); close(stopped) }()
	time.Sleep(300 * time.Millisecond) // shutdown has begun; the call is still under way
	close(held.release)
	if out := <-verified; !strings.Contains(out, "ACCEPTED") {
		t.Fatalf("the call under way at shutdown: %s", out)
	}
	<-stopped

	st, err := cfg.openStore(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	secrets, err := st.ListSecrets(t.Context(), "gh")
	if err != nil || len(secrets) != 1 {
		t.Fatalf("ListSecrets: %v, %v", secrets, err)
	}
	if secrets[0].LastUsedAt.IsZero() {
		t.Errorf("the secret that authenticated the call drained at shutdown has no last use recorded")
	}
}

// TestCallsDuringTheDrainAnswerUnavailable: while a call under way holds the drain, a new call
// on a connection opened before the shutdown is answered UNAVAILABLE at once (the edge retries
// another instance), rather than wait for the drain, and the call under way gets its answer.
func TestCallsDuringTheDrainAnswerUnavailable(t *testing.T) {
	r, held := startHoldingServer(t, storeConfig{dataDir: t.TempDir()})
	conn := dialPlain(t, r.addr)
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	delivery := githubDeliveries(t, conn)
	type answer struct {
		resp *hookverifyv1.VerifyResponse
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		resp, err := verifier.Verify(t.Context(), delivery("d-1"))
		first <- answer{resp, err}
	}()
	<-held.entered
	stopped := make(chan struct{})
	go func() { r.stop(); close(stopped) }()
	time.Sleep(300 * time.Millisecond) // shutdown has begun; the first call is still under way

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	start := time.Now()
	_, err := verifier.Verify(ctx, delivery("d-2"))
	if status.Code(err) != codes.Unavailable || time.Since(start) > time.Second {
		t.Errorf("a new call during the drain: %v after %v, want UNAVAILABLE at once", err, time.Since(start).Round(time.Millisecond))
	}
	close(held.release)
	if a := <-first; a.err != nil || a.resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_ACCEPTED {
		t.Errorf("the call under way at shutdown: %v, %v; want ACCEPTED", a.resp, a.err)
	}
	<-stopped
}

// TestSecondSignalCutsTheDrainShort: a second SIGTERM or SIGINT during the drain cuts off the
// calls still running at once (their callers get UNAVAILABLE) rather than wait out the drain
// bound; serve then closes the store as usual. Before, Main's handler swallowed it.
func TestSecondSignalCutsTheDrainShort(t *testing.T) {
	r, held := startHoldingServer(t, storeConfig{dataDir: t.TempDir()})
	defer close(held.release)
	conn := dialPlain(t, r.addr)
	delivery := githubDeliveries(t, conn)
	answered := make(chan error, 1)
	go func() {
		_, err := hookverifyv1.NewVerifierServiceClient(conn).Verify(t.Context(), delivery("d-1"))
		answered <- err
	}()
	<-held.entered
	cut, secondSignalNow := context.WithCancelCause(t.Context())
	stopped := make(chan error, 1)
	go func() { stopped <- r.shutdown(cut) }()
	time.Sleep(300 * time.Millisecond) // draining, the call held
	start := time.Now()
	secondSignalNow(secondSignalCause{os.Interrupt})
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("shutdown: %v", err)
		}
	case <-time.After(drainBound - time.Second):
		t.Fatal("a second signal did not cut the drain short")
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("shutdown took %v after the second signal", took.Round(time.Millisecond))
	}
	if err := <-answered; status.Code(err) != codes.Unavailable {
		t.Errorf("the call cut off: %v, want UNAVAILABLE", err)
	}
}

// closeFailingStore fails to close.
type closeFailingStore struct{ storage.Store }

func (c closeFailingStore) Close() error {
	c.Store.Close()
	return errors.New("checkpoint failed")
}

// TestShutdownReportsAStoreThatFailsToClose: serve exits nonzero when closing the store fails
// (for SQLite, the last connection's checkpoint of the WAL), and logs it; it exited 0 after
// ignoring the error, so a supervisor saw a clean stop.
func TestShutdownReportsAStoreThatFailsToClose(t *testing.T) {
	r := startServerWrapping(t, storeConfig{dataDir: t.TempDir()}, func(st storage.Store) storage.Store { return closeFailingStore{st} })
	if err := r.shutdown(context.Background()); err == nil || !strings.Contains(err.Error(), "checkpoint failed") {
		t.Errorf("shutdown with a store that fails to close: %v, want its error", err)
	}
}

// TestCommandsGetTheServersOwnAnswerWhileStorageIsNotReady: the CLI's one-shot commands reach
// a server whose storage is not open yet (health NOT_SERVING) and print its answer, "storage
// not ready yet", or the answer itself where no storage is needed (providers), rather than the
// client's refusal of a NOT_SERVING instance (client.WithoutHealthGate).
func TestCommandsGetTheServersOwnAnswerWhileStorageIsNotReady(t *testing.T) {
	r, err := startServer(t.Context(), newTestLogger(t), "127.0.0.1:0", testpki.Keyring(t), func(ctx context.Context) (storage.Store, error) {
		<-ctx.Done() // a database that never answers
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.stop()
	if code, out, errOut := run(t, "", "providers", "--server", r.addr); code != 0 || !strings.Contains(out, `"github"`) {
		t.Errorf("providers while storage is not ready: exit %d, %s%s", code, out, errOut)
	}
	if code, _, errOut := run(t, "", "endpoint", "list", "--server", r.addr); code != 1 || !strings.Contains(errOut, "storage not ready") {
		t.Errorf("endpoint list while storage is not ready: exit %d, %s; want the server's own answer", code, errOut)
	}
}

// TestServeHTTPListenerDropsHeldConnections: --http-listen's server bounded only the reading
// of headers. A connection kept alive after a scrape, or one that dribbles a request's body,
// was held for ever: nothing closed it but the client.
func TestServeHTTPListenerDropsHeldConnections(t *testing.T) {
	r := startReadyServerWithHTTP(t)
	t.Cleanup(r.stop)
	// Generous bounds: the server's own are well under them.
	const bound = 150 * time.Second

	// closedWithin reads what the server sends on conn until it closes it, and fails the
	// test if it has not within bound.
	closedWithin := func(t *testing.T, conn net.Conn, what string) {
		t.Helper()
		conn.SetReadDeadline(time.Now().Add(bound))
		start := time.Now()
		if _, err := io.Copy(io.Discard, conn); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("%s: the connection was still open after %v", what, time.Since(start).Round(time.Second))
		}
	}

	t.Run("idle keep-alive", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", r.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		closedWithin(t, conn, "idle after a request")
	})

	t.Run("dribbled body", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", r.httpAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			tick := time.NewTicker(500 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := conn.Write([]byte{'x'}); err != nil {
						return
					}
				}
			}
		}()
		closedWithin(t, conn, "body dribbled a byte every 500 ms")
	})
}

// startReadyServerWithHTTP starts a server in process on loopback, with --http-listen, on a
// fresh embedded store, and waits until it is ready. Stopping it is the caller's.
func startReadyServerWithHTTP(t *testing.T) *runningServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	sc := serveConfig{listen: "127.0.0.1:0", httpListen: "127.0.0.1:0"}
	store := storeConfig{dataDir: t.TempDir()}
	r, err := startServerWith(ctx, slog.New(slog.NewJSONHandler(io.Discard, nil)), sc, testpki.Keyring(t), store.openStore)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitReady(ctx); err != nil {
		r.stop()
		t.Fatal(err)
	}
	return r
}
