package faults

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// The binary is built once per test run, on first use, into a folder TestMain removes.
var build struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}

// hookverifyBinary returns the path of a hookverify binary built from this module.
func hookverifyBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(out)))
		if build.dir, build.err = os.MkdirTemp("", "hookverify-faults-"); build.err != nil {
			return
		}
		path := filepath.Join(build.dir, "hookverify")
		cmd := exec.Command("go", "build", "-o", path, "./cmd/hookverify")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/hookverify: %w\n%s", err, out)
			return
		}
		build.path = path
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// masterKeyFile writes a fresh master key for a server and returns its path.
func masterKeyFile(t *testing.T) string {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	path := filepath.Join(t.TempDir(), "master.key")
	if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sqliteArgs are the serve flags of an embedded store in a fresh data directory.
func sqliteArgs(t *testing.T) (args []string, dbPath string) {
	t.Helper()
	dir := t.TempDir()
	return []string{"--data-dir", dir, "--master-key-file", masterKeyFile(t)}, filepath.Join(dir, "hookverify.db")
}

// postgresArgs are the serve flags of a PostgreSQL store sharing one master key file.
func postgresArgs(url, keyFile string) []string {
	return []string{"--database-url", url, "--master-key-file", keyFile}
}

// process is one hookverify serve process, restartable on the same addresses and flags.
type process struct {
	t        *testing.T
	name     string
	args     []string
	addr     string // gRPC address, fixed by the first start
	httpAddr string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logs    []*syncbuf.Buffer // one per start, for the failure report
	starts  int
	running bool
}

// startProcess starts `hookverify serve` with the store flags, on free loopback ports, and
// waits until it reports SERVING. The process is killed when the test ends; its standard error
// goes to the test log if the test failed.
func startProcess(t *testing.T, name string, storeArgs ...string) *process {
	t.Helper()
	p := &process{t: t, name: name, args: storeArgs, addr: "127.0.0.1:0", httpAddr: "127.0.0.1:0"}
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			for i, l := range p.logs {
				t.Logf("--- %s stderr, start %d ---\n%s", p.name, i+1, tail(l.String(), 16<<10))
			}
		}
	})
	p.start()
	return p
}

// start starts the process (again) and waits until it serves.
func (p *process) start() {
	t := p.t
	t.Helper()
	p.mu.Lock()
	if p.running {
		p.mu.Unlock()
		t.Fatalf("%s: already running", p.name)
	}
	args := append([]string{"serve", "--listen", p.addr, "--http-listen", p.httpAddr, "--log-level", "info"}, p.args...)
	cmd := exec.Command(hookverifyBinary(t), args...)
	out := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = os.Environ()
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		t.Fatalf("%s: start: %v", p.name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	p.cmd, p.exited, p.running = cmd, exited, true
	p.logs = append(p.logs, out)
	p.starts++
	p.mu.Unlock()

	// The first start listens on port 0; the serving line names the ports it got, which later
	// starts reuse so that clients reconnect to the same address.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if line, ok := findLogLine(out.String(), "hookverify serving"); ok {
			var entry struct{ Addr, HTTP string }
			if err := json.Unmarshal([]byte(line), &entry); err != nil || entry.Addr == "" {
				t.Fatalf("%s: cannot read the serving line %q: %v", p.name, line, err)
			}
			p.addr, p.httpAddr = entry.Addr, entry.HTTP
			break
		}
		select {
		case <-exited:
			t.Fatalf("%s exited during start: %v\n%s", p.name, cmd.ProcessState, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no serving line within 60s\n%s", p.name, out.String())
		}
	}
	p.waitServing(deadline)
}

// waitServing polls the gRPC health service until storage is open and migrated.
func (p *process) waitServing(deadline time.Time) {
	t := p.t
	t.Helper()
	conn := p.dial()
	defer conn.Close()
	health := healthpb.NewHealthClient(conn.GRPC())
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not SERVING in time (last: %v, %v)", p.name, resp.GetStatus(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL, as a crash would, and waits until the process is gone.
func (p *process) kill() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	p.running = false
}

// pid is the running process's id.
func (p *process) pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd.Process.Pid
}

// alive reports whether the process started last is still running.
func (p *process) alive() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.exited:
		return false
	default:
		return p.running
	}
}

// dial connects a client to the process. Client-side retries are off, so the test sees every
// answer as the server gave it, and reconnection backoff is short, so that a restarted server
// is reached again quickly.
func (p *process) dial() *client.Conn {
	p.t.Helper()
	conn, err := client.Dial(p.addr,
		client.WithRetry(client.RetryPolicy{MaxAttempts: 1}),
		client.WithGRPCOptions(grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 250 * time.Millisecond},
			MinConnectTimeout: time.Second,
		})))
	if err != nil {
		p.t.Fatalf("%s: dial: %v", p.name, err)
	}
	return conn
}

// findLogLine returns the first JSON log line whose msg is msg.
func findLogLine(logs, msg string) (string, bool) {
	needle := `"msg":` + fmt.Sprintf("%q", msg)
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, needle) {
			return line, true
		}
	}
	return "", false
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "...\n" + s[len(s)-n:]
}

// endpoint is an endpoint the tests deliver to, with the secret they sign with.
type endpoint struct {
	id       string
	provider *protocol.Protocol
	secret   string // signing side
}

// createEndpoint creates an endpoint of the provider with its example secret.
func createEndpoint(t *testing.T, conn *client.Conn, id, provider string) endpoint {
	t.Helper()
	prov, ok := protocol.Default().Lookup(provider)
	if !ok {
		t.Fatalf("no provider %q", provider)
	}
	signing, verifying, err := prov.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := conn.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: id, Provider: provider}}); err != nil {
		t.Fatalf("create endpoint %s: %v", id, err)
	}
	if _, err := conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: id, Secret: verifying}); err != nil {
		t.Fatalf("add secret to %s: %v", id, err)
	}
	return endpoint{id: id, provider: prov, secret: signing}
}

// delivery signs a delivery of the event as the provider would send it, now.
func (e endpoint) delivery(t testing.TB, eventID string) *hookverifyv1.VerifyRequest {
	body := []byte(fmt.Sprintf(`{"id":%q,"object":"event","data":{"n":%q}}`, eventID, strings.Repeat("x", 64)))
	return e.signed(t, eventID, body, time.Now())
}

// signed signs body for the event at ts.
func (e endpoint) signed(t testing.TB, eventID string, body []byte, ts time.Time) *hookverifyv1.VerifyRequest {
	url := "https://hooks.example.com/" + e.id
	s, err := protocol.SignDelivery(e.provider, protocol.SignInput{Body: body, EventID: eventID, Timestamp: ts, Method: "POST", URL: url}, []string{e.secret})
	if err != nil {
		if t == nil {
			panic(fmt.Sprintf("sign: %v", err))
		}
		t.Fatalf("sign: %v", err)
	}
	req := &hookverifyv1.VerifyRequest{EndpointId: e.id, Body: s.Body, Method: "POST", Url: url}
	if s.URL != "" {
		req.Url = s.URL
	}
	for _, h := range s.Headers {
		req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
	}
	return req
}
