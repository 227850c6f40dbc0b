package cli

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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

	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// TestStopIsNotHeldByHealthWatchers: a client watching health (grpc.health.v1.Health/Watch,
// what gRPC client-side health checking and several balancers use) keeps a stream open for as
// long as it watches. Shutdown reports NOT_SERVING to it, and the graceful stop must then end
// the watch, rather than wait for it until the drain bound and cut off every call still
// running then.
func TestStopIsNotHeldByHealthWatchers(t *testing.T) {
	cfg := storeConfig{dataDir: t.TempDir()}
	r, err := startServer(t.Context(), newTestLogger(t), "127.0.0.1:0", testpki.Keyring(t), cfg.openStore)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	watch, err := healthpb.NewHealthClient(conn).Watch(t.Context(), &healthpb.HealthCheckRequest{})
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

// TestSecretUseOfCallsDrainedAtShutdownIsWritten: a Verify call under way at SIGTERM is let
// finish, and the secret that authenticated it was used. stop ended the secret-use writer
// (its last flush) before the drain, so the uses of every call drained were noted after the
// last write and lost: an old secret whose last deliveries came during a restart showed an
// older last_used_time, which the rotation runbook reads to decide it is quiet.
func TestSecretUseOfCallsDrainedAtShutdownIsWritten(t *testing.T) {
	cfg := storeConfig{dataDir: t.TempDir()}
	held := &claimHoldingStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	r, err := startServer(t.Context(), newTestLogger(t), "127.0.0.1:0", testpki.Keyring(t), func(ctx context.Context) (storage.Store, error) {
		st, err := cfg.openStore(ctx)
		if err != nil {
			return nil, err
		}
		held.Store = st
		return held, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
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
	cfg := storeConfig{dataDir: t.TempDir()}
	held := &claimHoldingStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	r, err := startServer(t.Context(), newTestLogger(t), "127.0.0.1:0", testpki.Keyring(t), func(ctx context.Context) (storage.Store, error) {
		st, err := cfg.openStore(ctx)
		if err != nil {
			return nil, err
		}
		held.Store = st
		return held, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := hookverifyv1.NewAdminServiceClient(conn)
	if _, err := admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "gh", Provider: "github"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "gh", Secret: "gh-secret"}); err != nil {
		t.Fatal(err)
	}
	verifier := hookverifyv1.NewVerifierServiceClient(conn)
	delivery := func(id string) *hookverifyv1.VerifyRequest {
		body := []byte(`{"zen":"` + id + `"}`)
		mac := hmac.New(sha256.New, []byte("gh-secret"))
		mac.Write(body)
		return &hookverifyv1.VerifyRequest{EndpointId: "gh", Body: body, Method: "POST", Url: "https://example.com/hook",
			Headers: []*hookverifyv1.HeaderField{{Name: "X-GitHub-Delivery", Value: id}, {Name: "X-Hub-Signature-256", Value: "sha256=" + hex.EncodeToString(mac.Sum(nil))}}}
	}
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
	_, err = verifier.Verify(ctx, delivery("d-2"))
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
	cfg := storeConfig{dataDir: t.TempDir()}
	held := &claimHoldingStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(held.release)
	r, err := startServer(t.Context(), newTestLogger(t), "127.0.0.1:0", testpki.Keyring(t), func(ctx context.Context) (storage.Store, error) {
		st, err := cfg.openStore(ctx)
		if err != nil {
			return nil, err
		}
		held.Store = st
		return held, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(r.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := hookverifyv1.NewAdminServiceClient(conn)
	if _, err := admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "gh", Provider: "github"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddSecret(t.Context(), &hookverifyv1.AddSecretRequest{EndpointId: "gh", Secret: "gh-secret"}); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"zen":"x"}`)
	mac := hmac.New(sha256.New, []byte("gh-secret"))
	mac.Write(body)
	answered := make(chan error, 1)
	go func() {
		_, err := hookverifyv1.NewVerifierServiceClient(conn).Verify(t.Context(), &hookverifyv1.VerifyRequest{EndpointId: "gh", Body: body, Method: "POST", Url: "https://example.com/hook",
			Headers: []*hookverifyv1.HeaderField{{Name: "X-GitHub-Delivery", Value: "d-1"}, {Name: "X-Hub-Signature-256", Value: "sha256=" + hex.EncodeToString(mac.Sum(nil))}}})
		answered <- err
	}()
	<-held.entered
	cut := make(chan os.Signal, 1)
	stopped := make(chan error, 1)
	go func() { stopped <- r.shutdown(cut) }()
	time.Sleep(300 * time.Millisecond) // draining, the call held
	start := time.Now()
	cut <- os.Interrupt
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
	cfg := storeConfig{dataDir: t.TempDir()}
	r, err := startServer(t.Context(), newTestLogger(t), "127.0.0.1:0", testpki.Keyring(t), func(ctx context.Context) (storage.Store, error) {
		st, err := cfg.openStore(ctx)
		if err != nil {
			return nil, err
		}
		return closeFailingStore{st}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.waitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := r.shutdown(nil); err == nil || !strings.Contains(err.Error(), "checkpoint failed") {
		t.Errorf("shutdown with a store that fails to close: %v, want its error", err)
	}
}
