package cli

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// TestEdgeAnswersUnroutedRequestsBeforeTheirBody: http.ServeMux answers a path no route takes
// (404) and /healthz with another method (405) without reading the body, and net/http then
// read up to 256 KiB of it before sending the answer, so that the connection could serve
// another request: a body that stalled, or came slowly, held the answer until --read-timeout,
// when it was most often lost (the write deadline has passed by then). The edge's own early
// answers, and the Node edge's, go at once with Connection: close; so do these now. A
// large body sent whole is answered and the connection closed, never reused for its bytes.
func TestEdgeAnswersUnroutedRequestsBeforeTheirBody(t *testing.T) {
	v, addr := startStalledVerifier(t)
	v.finish()
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr, "--read-timeout", "10s", "--metrics-listen", "127.0.0.1:0")
	listening := logLine(t, edge.log, "edge listening")
	listen, metrics := listening["addr"].(string), listening["metrics_addr"].(string)
	for _, tc := range []struct {
		addr, head string
		status     int
	}{
		{listen, "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}", 404},
		{listen, "POST /nowhere HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n", 404},
		{listen, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}", 405},
		{listen, "POST /hooks/ep/x HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}", 404},
		{metrics, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}", 405},
		{metrics, "POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n{}", 404},
	} {
		wantAnsweredBeforeTheBody(t, tc.addr, tc.head, tc.status)
	}

	// A body of a few MiB sent whole: answered, and the connection is closed rather than kept
	// for the next request (the rest of the body is never read as one).
	c, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := make([]byte, 4<<20)
	go func() {
		_, _ = io.WriteString(c, "POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 4194304\r\n\r\n")
		_, _ = c.Write(body)
	}()
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("a large body to a path no route takes: %v", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !resp.Close {
		t.Errorf("a large body to a path no route takes: %d, Connection: close %v; want 404 and close", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF && !isConnReset(err) {
		rest, _ := io.ReadAll(io.LimitReader(br, 300))
		t.Errorf("after the answer to a large body the connection stays open: %v %q", err, rest)
	}

	// Requests the route takes, and GET /healthz without a body, keep their connection.
	c2, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_ = c2.SetDeadline(time.Now().Add(5 * time.Second))
	br2 := bufio.NewReader(c2)
	for _, req := range []string{"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", "POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}", "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"} {
		_, _ = io.WriteString(c2, req)
		resp, err := http.ReadResponse(br2, nil)
		if err != nil {
			t.Fatalf("%q: %v", req, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Close {
			t.Errorf("%q: %d, Connection: close %v; want 200, kept alive", req, resp.StatusCode, resp.Close)
		}
	}
}

func isConnReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// wantAnsweredBeforeTheBody sends head, a request whose body never comes, to addr, and wants
// the answer status at once, with the connection closed (--read-timeout is 10 s: an answer
// waiting for the body comes too late for the 3 s allowed).
func wantAnsweredBeforeTheBody(t *testing.T, addr, head string, status int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(3 * time.Second))
	_, _ = io.WriteString(c, head)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Errorf("%q: no answer while the body stalls: %v", head, err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode != status || !resp.Close {
		t.Errorf("%q: %d, Connection: close %v; want %d and close", head, resp.StatusCode, resp.Close, status)
	}
}
