package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/ratelog"
	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/internal/testpki"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// logLine returns the first JSON log line of logs with the message, waiting for it.
func logLine(t *testing.T, logs *syncbuf.Buffer, msg string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var line map[string]any
			if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == msg {
				return line
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q log line in:\n%s", msg, logs.String())
	return nil
}

// runningEdge is `hookverify edge` started in the background.
type runningEdge struct {
	log  *syncbuf.Buffer
	stop func() error
}

func startEdge(t *testing.T, args ...string) *runningEdge {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- runEdge(ctx, env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: log}, args) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	return &runningEdge{log: log, stop: stop}
}

// TestEdgeCommand runs `hookverify edge` against a real server and sends it real signed
// deliveries over HTTP and HTTPS.
func TestEdgeCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	keyring := testpki.Keyring(t)
	cfg := storeConfig{dataDir: t.TempDir()}
	srv, err := startServer(ctx, newTestLogger(t), "127.0.0.1:0", keyring, cfg.openStore)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	if err := srv.waitReady(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := client.Dial(srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stripe, _ := protocol.Default().Lookup("stripe")
	signing, verifying, err := stripe.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "shop", Provider: "stripe"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: "shop", Secret: verifying}); err != nil {
		t.Fatal(err)
	}
	deliver := func(t *testing.T, hc *http.Client, url, eventID string) (*http.Response, []byte) {
		t.Helper()
		signed, err := protocol.SignDelivery(stripe, protocol.SignInput{Body: protocol.ExampleBody(stripe, eventID), EventID: eventID, Timestamp: time.Now(), Method: "POST"}, []string{signing})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("POST", url, bytes.NewReader(signed.Body))
		for _, h := range signed.Headers {
			req.Header.Add(h.Name, h.Value)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp, signed.Body
	}
	t.Run("http with metrics on the same address", func(t *testing.T) {
		edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", srv.addr, "--route", "/hooks/{endpoint}")
		base := "http://" + logLine(t, edge.log, "edge listening")["addr"].(string)
		resp, body := deliver(t, http.DefaultClient, base+"/hooks/shop", "evt_edge_cmd_1")
		if resp.StatusCode != 200 {
			t.Fatalf("signed delivery: %d", resp.StatusCode)
		}
		if resp, _ := deliver(t, http.DefaultClient, base+"/hooks/elsewhere", "evt_edge_cmd_2"); resp.StatusCode != 400 {
			t.Errorf("unknown endpoint: %d", resp.StatusCode)
		}
		metrics := get(t, base+"/metrics")
		for _, want := range []string{
			`hookverify_edge_requests_total{endpoint="shop",status="200"} 1`,
			`hookverify_edge_requests_total{endpoint="_unknown",status="400"} 1`,
			`hookverify_edge_verifier_duration_seconds_count 2`,
		} {
			if !strings.Contains(metrics, want) {
				t.Errorf("/metrics lacks %s:\n%s", want, metrics)
			}
		}
		access := logLine(t, edge.log, "request")
		for k, want := range map[string]any{"method": "POST", "path": "/hooks/shop", "endpoint": "shop", "status": 200.0, "verdict": "VERDICT_ACCEPTED"} {
			if access[k] != want {
				t.Errorf("access log %s = %v, want %v (%v)", k, access[k], want, access)
			}
		}
		if _, ok := access["duration"]; !ok {
			t.Errorf("access log lacks duration: %v", access)
		}
		if err := edge.stop(); err != nil {
			t.Errorf("edge exit: %v", err)
		}
		if logs := edge.log.String(); strings.Contains(logs, string(body)) || strings.Contains(logs, "v1=") {
			t.Errorf("logs contain a body or a signature:\n%s", logs)
		}
		logLine(t, edge.log, "edge shutting down")
	})

	t.Run("https with separate metrics", func(t *testing.T) {
		ca := testpki.NewCA(t, "edge CA")
		first := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}, Server: true})
		certFile, keyFile := testpki.WriteKeyPair(t, t.TempDir(), "edge", first)
		edge := startEdge(t, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--verifier", srv.addr,
			"--route", "POST /in/{endpoint}", "--tls-cert", certFile, "--tls-key", keyFile)
		line := logLine(t, edge.log, "edge listening")
		roots := x509.NewCertPool()
		roots.AddCert(ca.Cert)
		// A new connection each time, as each provider's delivery may be.
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
		resp, _ := deliver(t, hc, "https://"+line["addr"].(string)+"/in/shop", "evt_edge_cmd_3")
		if resp.StatusCode != 200 {
			t.Fatalf("signed delivery over HTTPS: %d", resp.StatusCode)
		}
		if got, want := resp.TLS.PeerCertificates[0].SerialNumber, testpki.Serial(t, first); got.Cmp(want) != 0 {
			t.Fatalf("edge presented serial %v, want %v", got, want)
		}

		// A renewal on disk (certbot, cert-manager) is presented from the next connection on.
		renewed := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "edge"}, Server: true})
		testpki.WriteCertificate(t, certFile, renewed)
		testpki.WriteKey(t, keyFile, renewed)
		resp, _ = deliver(t, hc, "https://"+line["addr"].(string)+"/in/shop", "evt_edge_cmd_4")
		if resp.StatusCode != 200 {
			t.Fatalf("signed delivery over HTTPS after the renewal: %d", resp.StatusCode)
		}
		if got, want := resp.TLS.PeerCertificates[0].SerialNumber, testpki.Serial(t, renewed); got.Cmp(want) != 0 {
			t.Fatalf("after the renewal the edge presented serial %v, want the renewed %v", got, want)
		}
		logLine(t, edge.log, "reloaded the TLS files")

		// A TCP health check (connect, close) is not logged; a client speaking plaintext is.
		addr := line["addr"].(string)
		for range 3 {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
		}
		if _, err := http.Get("http://" + addr + "/in/shop"); err != nil {
			t.Fatal(err)
		}
		failed := logLine(t, edge.log, "TLS handshake failed")
		if failed["level"] != "WARN" || !strings.HasPrefix(fmt.Sprint(failed["remote"]), "127.0.0.1:") {
			t.Errorf("plaintext client logged as %v", failed)
		}
		if n := strings.Count(edge.log.String(), "TLS handshake"); n != 1 {
			t.Errorf("%d TLS handshake lines, want 1 (health checks are not logged):\n%s", n, edge.log.String())
		}
		metrics := get(t, "http://"+line["metrics_addr"].(string)+"/metrics")
		if !strings.Contains(metrics, `hookverify_edge_requests_total{endpoint="shop",status="200"} 2`) {
			t.Errorf("/metrics:\n%s", metrics)
		}
	})
}

// TestEdgeRefusesBadFlags: settings that cannot work stop the edge before it listens, with an
// error naming the flag. Each runs with a cancelled context, so an edge that wrongly starts
// stops at once and is reported.
func TestEdgeRefusesBadFlags(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		args  []string
		names string // the flag the error must name
	}{
		{[]string{"--route", "/hooks/{id}"}, "--route"},
		// Subtree patterns: ServeMux redirects "/in/ep" to "/in/ep/" (a URL the provider did
		// not call) and routes "/in/ep/x/y" to endpoint ep.
		{[]string{"--route", "/in/{endpoint}/"}, "--route"},
		{[]string{"--route", "/in/{endpoint}/{rest...}"}, "--route"},
		{[]string{"--tls-cert", "x.pem"}, "--tls-key"},
		{[]string{"--max-body-bytes", "0"}, "--max-body-bytes"},
		// Above the server's ceiling: such bodies could never be accepted.
		{[]string{"--max-body-bytes", "33554433"}, "--max-body-bytes"},
		{[]string{"--max-body-bytes", "9223372036854775807"}, "--max-body-bytes"},
		{[]string{"--public-url-base", "hooks.example.com"}, "--public-url-base"},
		// Half a client certificate would silently leave the connection in plaintext.
		{[]string{"--verifier-key", "client.key"}, "--verifier-cert"},
		{[]string{"--verifier-cert", "client.pem"}, "--verifier-key"},
		{[]string{"--verifier-ca", "ca.pem", "--verifier-key", "client.key"}, "--verifier-cert"},
	} {
		err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}, append(tc.args, "--listen", "127.0.0.1:0"))
		if err == nil || !strings.Contains(err.Error(), tc.names) {
			t.Errorf("%q: err %v, want one naming %s", tc.args, err, tc.names)
		}
	}
	if code, _, _ := run(t, "", "edge", "--bogus"); code != 2 {
		t.Errorf("edge --bogus: exit %d", code)
	}
}

// TestEdgeMetricsLabelOnlyConfirmedEndpoints: an endpoint gets its own metrics label only once
// the server has answered for it as an existing endpoint. A body too large may be refused
// before the endpoint lookup, so that answer, like an unknown endpoint, counts as _unknown.
func TestEdgeMetricsLabelOnlyConfirmedEndpoints(t *testing.T) {
	rejected := func(reason hookverifyv1.RejectReason) *hookverifyv1.VerifyResponse {
		return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_REJECTED, RejectReason: reason}
	}
	m := newEdgeMetrics()
	for _, o := range []client.Outcome{
		{EndpointID: "random-scanner-path", Status: 413, CalledVerifier: true, Response: rejected(hookverifyv1.RejectReason_REJECT_REASON_BODY_TOO_LARGE)},
		{EndpointID: "no-such-endpoint", Status: 404, CalledVerifier: true, Response: rejected(hookverifyv1.RejectReason_REJECT_REASON_UNKNOWN_ENDPOINT)},
		{EndpointID: "not-forwarded", Status: 400},
		{EndpointID: "shop", Status: 401, CalledVerifier: true, Response: rejected(hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)},
	} {
		m.observe(o)
	}
	w := httptest.NewRecorder()
	m.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	metrics := w.Body.String()
	for _, want := range []string{
		`hookverify_edge_requests_total{endpoint="_unknown",status="413"} 1`,
		`hookverify_edge_requests_total{endpoint="_unknown",status="404"} 1`,
		`hookverify_edge_requests_total{endpoint="_unknown",status="400"} 1`,
		`hookverify_edge_requests_total{endpoint="shop",status="401"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s:\n%s", want, metrics)
		}
	}
}

// get returns the body of a GET of url, failing the test unless it answers 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", url, resp.StatusCode)
	}
	return string(body)
}

// TestEdgeRefusesTimeoutsThatLoseAnswers: the verifier timeout bounds each request's work, and
// the answer is written after it. With a --write-timeout no longer than it, a Verify that ends
// after the write deadline (a slow commit, retries across a server restart) has its answer
// dropped by net/http: the provider sees the connection close, the access log and metrics say
// 200, and for a stored event every redelivery that is as slow is lost the same way, until the
// provider gives up on the endpoint. Over HTTP/2 the write timeout even cancels the call. And a
// --verifier-timeout of zero or less removes the deadline altogether and leaves the graceful
// drain (verifier timeout + 2 s) too short to finish in-flight deliveries, or none at all.
func TestEdgeRefusesTimeoutsThatLoseAnswers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		args  []string
		names string // "" when the edge must start
	}{
		{[]string{"--verifier-timeout", "0"}, "--verifier-timeout"},
		{[]string{"--verifier-timeout", "-5s"}, "--verifier-timeout"},
		{[]string{"--write-timeout", "5s"}, "--write-timeout"},
		{[]string{"--write-timeout", "8s"}, "--write-timeout"},
		{[]string{"--verifier-timeout", "12s"}, "--write-timeout"},
		{[]string{"--verifier-timeout", "2s", "--write-timeout", "3s"}, ""},
		{[]string{"--write-timeout", "0"}, ""}, // no write deadline at all
	} {
		err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}, append(tc.args, "--listen", "127.0.0.1:0", "--verifier", "127.0.0.1:1"))
		if tc.names == "" && err != nil {
			t.Errorf("%q: %v, want the edge to start", tc.args, err)
		}
		if tc.names != "" && (err == nil || !strings.Contains(err.Error(), tc.names)) {
			t.Errorf("%q: err %v, want one naming %s", tc.args, err, tc.names)
		}
	}
}

// TestEdgeRefusesPublicURLBasesThatCannotBeAURLPrefix: the forwarded URL is --public-url-base
// followed by the request URI, and URL-signing providers (Twilio, Square, HubSpot) sign the URL
// they called byte for byte. A base with no host, a stray space, a query, a fragment or
// credentials can never be the front of that URL, so every such delivery would be rejected as
// a signature mismatch, a 4xx most providers never retry; the edge refuses it at start instead.
func TestEdgeRefusesPublicURLBasesThatCannotBeAURLPrefix(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		base string
		ok   bool
	}{
		{"https://", false},
		{"https:///hooks", false},
		{"https://hooks.example.com ", false},
		{" https://hooks.example.com", false},
		{"https://hooks.example.com?x=1", false},
		{"https://hooks.example.com/#top", false},
		{"https://user:pw@hooks.example.com", false},
		{"https://hooks.example.com", true},
		{"https://hooks.example.com/", true},
		{"http://hooks.example.com:8080/edge", true}, // a prefix the proxy strips
	} {
		err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard},
			[]string{"--public-url-base", tc.base, "--listen", "127.0.0.1:0", "--verifier", "127.0.0.1:1"})
		if tc.ok && err != nil {
			t.Errorf("--public-url-base %q: %v, want the edge to start", tc.base, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "--public-url-base")) {
			t.Errorf("--public-url-base %q: err %v, want one naming --public-url-base", tc.base, err)
		}
	}
}

// TestEdgePublicURLBaseErrorQuotesNoCredentials: the refusal of a base with credentials in it
// does not repeat them.
func TestEdgePublicURLBaseErrorQuotesNoCredentials(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard},
		[]string{"--public-url-base", "https://edge:hunter2-secret@hooks.example.com", "--listen", "127.0.0.1:0", "--verifier", "127.0.0.1:1"})
	if err == nil || strings.Contains(err.Error(), "hunter2-secret") {
		t.Errorf("err %v: want a refusal that does not quote the password", err)
	}
}

// TestEdgeHandshakeLogIsRateLimited: a flood of failed TLS handshakes logs one line per
// interval, carrying how many were not logged; closes and resets before the hello, none.
func TestEdgeHandshakeLogIsRateLimited(t *testing.T) {
	var out syncbuf.Buffer
	now := time.Unix(1_700_000_000, 0)
	w := &edgeErrorLog{log: slog.New(slog.NewJSONHandler(&out, nil)), limit: ratelog.New(edgeHandshakeLogInterval, func() time.Time { return now })}
	errorLog := stdlog.New(w, "", 0)
	errorLog.Print("http: TLS handshake error from 10.0.0.1:1234: EOF")
	errorLog.Print("http: TLS handshake error from 10.0.0.1:1235: read tcp 10.0.0.2:443->10.0.0.1:1235: read: connection reset by peer")
	for range 3 {
		errorLog.Print("http: TLS handshake error from 192.0.2.7:4242: client sent an HTTP request to an HTTPS server")
	}
	now = now.Add(edgeHandshakeLogInterval)
	errorLog.Print("http: TLS handshake error from 192.0.2.7:4243: tls: unsupported SSLv2 handshake received")
	errorLog.Print("http: superfluous response.WriteHeader call")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d log lines, want 3:\n%s", len(lines), out.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if first["remote"] != "192.0.2.7:4242" || first["err"] != "client sent an HTTP request to an HTTPS server" || first["not_logged_since_last"] != 0.0 {
		t.Errorf("first line %v", first)
	}
	if second["not_logged_since_last"] != 2.0 {
		t.Errorf("second line says %v not logged, want 2", second["not_logged_since_last"])
	}
	if !strings.Contains(lines[2], "superfluous") {
		t.Errorf("other net/http errors must still be logged: %s", lines[2])
	}
}
