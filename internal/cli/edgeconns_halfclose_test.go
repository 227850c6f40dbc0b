package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLimitedConnHalfClosesLikeTheTCPConnItWraps: net/http answers a request whose body it
// will not read (413 on a Content-Length over --max-body-bytes, 503 at --max-bytes-in-flight
// mid-body, 431) and then half-closes the connection (CloseWrite, a FIN) before closing it
// 500 ms later, so that the client, still uploading, reads the answer and its end before the
// reset its further bytes cause. It finds CloseWrite by a type assertion on the connection:
// the wrapper --max-connections puts around every connection (on by default) hid it, so the
// FIN was never sent and only the reset ended the exchange.
func TestLimitedConnHalfClosesLikeTheTCPConnItWraps(t *testing.T) {
	l, _, addr := newTestLimit(t, 1, func() {})
	peer, c := dialAccepted(t, l, addr)
	cw, ok := c.(interface{ CloseWrite() error })
	if !ok {
		t.Fatalf("the accepted %T has no CloseWrite: net/http cannot half-close it", c)
	}
	if err := cw.CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	// The peer reads the end of the stream while the connection is still open...
	_ = peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := peer.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Fatalf("the peer read %d bytes, %v after CloseWrite; want io.EOF", n, err)
	}
	// ...and may still send: only the write side is closed.
	if _, err := peer.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, 1)); err != nil {
		t.Fatalf("reading after CloseWrite: %v", err)
	}
}

// TestEdgeEndsAnAnswerToAnUnreadBodyWithAFIN: the same through the edge, at its default
// --max-connections. A client still uploading a body the edge refuses unread (a Content-Length
// over --max-body-bytes: 413) reads the answer, then the end of the connection: net/http's
// FIN, which the kernel reports as the end of the stream even if the reset of the close that
// follows has arrived since. Behind the wrapper there was no FIN: the client's next read,
// 500 ms later, failed with "connection reset by peer", and a client still writing then (as
// a provider uploading a large body is) could lose the answer with it.
func TestEdgeEndsAnAnswerToAnUnreadBodyWithAFIN(t *testing.T) {
	_, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr, "--max-body-bytes", "1024")
	line := edge.log.logLine(t, "edge listening")
	c, err := net.Dial("tcp", line["addr"].(string))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() {
		// More than net/http reads ahead: bytes left unread when it closes.
		fmt.Fprintf(c, "POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 10<<20)
		_, _ = c.Write([]byte(strings.Repeat("a", 600<<10)))
	}()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("answer %d, want 413", resp.StatusCode)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after the answer the connection ended with %v, want io.EOF (the edge's FIN)", err)
	}
}
