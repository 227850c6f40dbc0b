package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// pipelinedRequests sends the HTTP/1.1 requests (each "METHOD target") on one connection, the
// last with Connection: close, and reads every answer: net/http serves them one after another,
// so each request's handler, access log line included, has returned before the next is read.
func pipelinedRequests(t *testing.T, addr string, requests ...string) []int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	var b strings.Builder
	for i, r := range requests {
		method, target, _ := strings.Cut(r, " ")
		conn := ""
		if i == len(requests)-1 {
			conn = "Connection: close\r\n"
		}
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: hooks.example.com\r\n%s\r\n", method, target, conn)
	}
	if _, err := io.WriteString(c, b.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var codes []int
	for range requests {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	return codes
}

// requestLogLines returns the paths of the access log's "request" lines.
func requestLogLines(logs string) []string {
	var paths []string
	sc := bufio.NewScanner(strings.NewReader(logs))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) == nil && line["msg"] == "request" {
			p, _ := line["path"].(string)
			paths = append(paths, p)
		}
	}
	return paths
}

// TestEdgeAccessLogLeavesOutTheQuery: the access log names a request's path, never its query,
// which may hold a provider's token.
func TestEdgeAccessLogLeavesOutTheQuery(t *testing.T) {
	_, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr)
	listen := logLine(t, edge.log, "edge listening")["addr"].(string)
	if codes := pipelinedRequests(t, listen, "GET /no-such-route?token=query-secret-1234"); codes[0] != http.StatusNotFound {
		t.Fatalf("answered %d, want 404", codes[0])
	}
	line := logLine(t, edge.log, "request")
	if line["path"] != "/no-such-route" || strings.Contains(edge.log.String(), "query-secret-1234") {
		t.Errorf("access log line %v; want path /no-such-route and never the query:\n%s", line, edge.log.String())
	}
}

// TestEdgeLogsHealthAndMetricsRequestsAtDebug: the access log takes /healthz and /metrics
// requests (probes and scrapes, every few seconds) at debug level, so that at the default
// info level it holds webhook requests only.
func TestEdgeLogsHealthAndMetricsRequestsAtDebug(t *testing.T) {
	_, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr)
	listen := logLine(t, edge.log, "edge listening")["addr"].(string)
	codes := pipelinedRequests(t, listen, "GET /metrics", "GET /healthz", "GET /no-such-route")
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 404 {
		t.Fatalf("answered %v, want 200 200 404", codes)
	}
	// The last request's line is written after the others', which are not there at info.
	logLine(t, edge.log, "request")
	if paths := requestLogLines(edge.log.String()); len(paths) != 1 || paths[0] != "/no-such-route" {
		t.Errorf("access log lines for %q at info; want /no-such-route's alone", paths)
	}
}

// TestEdgeRefusesATokenWithASpace: a token holding a space (a stray one in an env file) is
// refused for its form, naming where it came from and never the token, even with a verifier
// on loopback (the refusal of a token in clear does not apply there).
func TestEdgeRefusesATokenWithASpace(t *testing.T) {
	file := t.TempDir() + "/token"
	if err := os.WriteFile(file, []byte("hvt_abc def"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	err := runEdge(ctx, env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}},
		[]string{"--listen", "127.0.0.1:0", "--token-file", file})
	if err == nil || !strings.Contains(err.Error(), "--token-file "+file) || strings.Contains(err.Error(), "hvt_abc") {
		t.Errorf("err %v; want a refusal naming --token-file %s, never the token", err, file)
	}
	// The verifier is on loopback: the token's form is the reason, not a clear-text transport.
	if err != nil && (strings.Contains(err.Error(), "in clear") || strings.Contains(err.Error(), "not loopback")) {
		t.Errorf("err %v; want the token's form given as the reason", err)
	}
}

// TestEdgeRefusesTLSBelow12: the edge's HTTPS listener takes TLS 1.2 and later only. (Go's
// own server default is TLS 1.2 too: this pins the behaviour, and catches a floor lowered in
// the edge's tls.Config, not one left out of it.) The handshakes are given a minute, not
// startTLSEdge's 1 s --read-header-timeout, which bounds them too.
func TestEdgeRefusesTLSBelow12(t *testing.T) {
	addr, cfg := startTLSEdge(t, "--read-header-timeout", "1m", "--read-timeout", "1m", "--write-timeout", "1m")
	old := cfg.Clone()
	old.MinVersion, old.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	c, err := tls.Dial("tcp", addr, old)
	if err == nil {
		v := c.ConnectionState().Version
		c.Close()
		t.Fatalf("a TLS handshake at version %x succeeded; want TLS 1.0 and 1.1 refused", v)
	}
	// TLS 1.2 is taken: the refusal is the version's.
	cur := cfg.Clone()
	cur.MaxVersion = tls.VersionTLS12
	c, err = tls.Dial("tcp", addr, cur)
	if err != nil {
		t.Fatalf("TLS 1.2 handshake: %v", err)
	}
	c.Close()
}

// TestEdgeRefusesHeadersAboveTheServersBound: a request whose header section is larger than
// the server takes (256 KiB, a little framing on top) is answered 431 by net/http without
// reaching a handler, so that each connection holds at most that much of headers (the bound
// --max-connections' memory rests on).
func TestEdgeRefusesHeadersAboveTheServersBound(t *testing.T) {
	_, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr)
	listen := logLine(t, edge.log, "edge listening")["addr"].(string)
	c, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	big := strings.Repeat("a", 300<<10)
	go fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: hooks.example.com\r\nX-Big: %s\r\nConnection: close\r\n\r\n", big)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("GET /healthz with 300 KiB of headers: %d, want 431", resp.StatusCode)
	}
}

// TestEdgeMetricsBoundTheEndpointLabels: past maxEndpointLabels confirmed endpoints, a new
// one is counted as _unknown, so that the label's values stay bounded.
func TestEdgeMetricsBoundTheEndpointLabels(t *testing.T) {
	m := newEdgeMetrics()
	signed := &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED}
	for i := range maxEndpointLabels + 1 {
		m.observe(client.Outcome{EndpointID: fmt.Sprintf("ep-%d", i), Status: 200, Response: signed})
	}
	w := httptest.NewRecorder()
	m.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	metrics := w.Body.String()
	last := fmt.Sprintf(`endpoint="ep-%d"`, maxEndpointLabels)
	if strings.Contains(metrics, last) || !strings.Contains(metrics, `hookverify_edge_requests_total{endpoint="_unknown",status="200"} 1`) {
		t.Errorf("the endpoint past %d confirmed ones got its own label, or was not counted as _unknown", maxEndpointLabels)
	}
	if !strings.Contains(metrics, `endpoint="ep-0"`) {
		t.Error("a confirmed endpoint has no label of its own")
	}
}
