package cli

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/testpki"
)

// startTLSEdge starts the edge over HTTPS (so HTTP/2 too) in front of a verifier that never
// answers, with short timeouts; it returns the address and the client TLS config.
func startTLSEdge(t *testing.T, extra ...string) (string, *tls.Config) {
	t.Helper()
	_, addr := startStalledVerifier(t)
	ca := testpki.NewCA(t, "edge CA")
	certFile, keyFile := testpki.WriteKeyPair(t, t.TempDir(), "edge", ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "127.0.0.1"}, Server: true}))
	args := append([]string{"--listen", "127.0.0.1:0", "--verifier", addr, "--tls-cert", certFile, "--tls-key", keyFile,
		"--read-header-timeout", "1s", "--read-timeout", "2s", "--verifier-timeout", "3s", "--write-timeout", "4s"}, extra...)
	edge := startEdge(t, args...)
	return logLine(t, edge.log, "edge listening")["addr"].(string), &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"}
}

// TestEdgeAnswersAStalledHTTP2BodyInTime: --read-timeout holds for HTTP/2 streams too (net/http
// applies it per stream), so a body that stalls is answered 503 by then, not held until the
// connection's idle timeout. (A header block that never ends is not: see the review report.)
func TestEdgeAnswersAStalledHTTP2BodyInTime(t *testing.T) {
	addr, cfg := startTLSEdge(t)
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg, ForceAttemptHTTP2: true}}
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte("0123456789"))
	req, _ := http.NewRequest("POST", "https://"+addr+"/hooks/ep", pr)
	req.ContentLength = 100
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.ProtoMajor != 2 || resp.StatusCode != http.StatusServiceUnavailable || took > 2500*time.Millisecond {
		t.Errorf("%s answered %d after %v; want HTTP/2 503 at the 2 s --read-timeout", resp.Proto, resp.StatusCode, took)
	}
}
