package server

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/credentials"

	"github.com/hookverify/hookverify/internal/ratelog"
	"github.com/hookverify/hookverify/internal/testpki"
)

// TestHandshakeLogIsRateLimited: every failed handshake is counted, but a flood of them logs
// one line per interval, carrying how many were not logged; a connection closed before its
// hello (a TCP health check) is counted and never logged.
func TestHandshakeLogIsRateLimited(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	h := &handshakeLog{logger: slog.New(slog.NewJSONHandler(&out, nil)), metrics: NewMetrics(), limit: ratelog.New(handshakeLogInterval, func() time.Time { return now })}
	remote := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 4242}
	refused := errors.New("tls: first record does not look like a TLS handshake")

	h.failed(remote, io.EOF)
	for range 3 {
		h.failed(remote, refused)
	}
	now = now.Add(handshakeLogInterval)
	h.failed(remote, refused)

	var counted dto.Metric
	if err := h.metrics.handshakeFailures.Write(&counted); err != nil {
		t.Fatal(err)
	}
	if got := counted.GetCounter().GetValue(); got != 5 {
		t.Errorf("counted %v failed handshakes, want 5", got)
	}
	var lines []map[string]any
	for _, raw := range bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n")) {
		var line map[string]any
		if err := json.Unmarshal(raw, &line); err != nil {
			t.Fatalf("log line %q: %v", raw, err)
		}
		lines = append(lines, line)
	}
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2 (one per interval):\n%s", len(lines), out.String())
	}
	if lines[0]["remote"] != "192.0.2.7:4242" || lines[0]["err"] != refused.Error() || lines[0]["not_logged_since_last"] != 0.0 {
		t.Errorf("first line %v", lines[0])
	}
	if lines[1]["not_logged_since_last"] != 2.0 {
		t.Errorf("second line says %v not logged, want 2", lines[1]["not_logged_since_last"])
	}
}

// TestHandshakeResetBeforeHelloIsNotLogged: a TCP health check that closes with a reset
// rather than a FIN (HAProxy and other balancers close checks with SO_LINGER 0, to spare
// TIME_WAIT sockets) is a connection closed before its hello too: counted, not logged, or
// every instance behind such a balancer logged a warning every 10 s for ever.
func TestHandshakeResetBeforeHelloIsNotLogged(t *testing.T) {
	var out bytes.Buffer
	h := &handshakeLog{logger: slog.New(slog.NewJSONHandler(&out, nil)), metrics: NewMetrics(), limit: ratelog.New(handshakeLogInterval, time.Now)}
	ca := testpki.NewCA(t, "test CA")
	cfg := &tls.Config{Certificates: []tls.Certificate{ca.Issue(t, testpki.Leaf{Server: true})}}
	creds := &observedCredentials{TransportCredentials: credentials.NewTLS(cfg), log: h}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	done := make(chan error, 1)
	go func() {
		conn, err := lis.Accept()
		if err != nil {
			done <- err
			return
		}
		time.Sleep(100 * time.Millisecond) // let the reset arrive before the handshake reads
		_, _, err = creds.ServerHandshake(conn)
		done <- err
	}()
	c, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if err := <-done; err == nil {
		t.Fatal("a handshake with a connection reset before its hello succeeded")
	}
	var counted dto.Metric
	if err := h.metrics.handshakeFailures.Write(&counted); err != nil {
		t.Fatal(err)
	}
	if got := counted.GetCounter().GetValue(); got != 1 {
		t.Errorf("counted %v failed handshakes, want 1", got)
	}
	if out.Len() != 0 {
		t.Errorf("a reset before the hello was logged:\n%s", out.String())
	}
}
