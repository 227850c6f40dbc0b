package client_test

import (
	"bufio"
	"bytes"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hookverify/hookverify/client"
)

// holdOneHead sends a bodiless request with a header of headBytes to srv, and waits until v
// holds it in Verify: its head then holds that much of the handler's bound until v is released.
// The returned channel gets its status.
func holdOneHead(t *testing.T, srv *httptest.Server, v *heldVerifier, headBytes int) <-chan int {
	t.Helper()
	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL+"/hooks/ep", nil)
		req.Header.Set("X-Padding", strings.Repeat("p", headBytes))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, waiting, _ := v.counts(); waiting == 1 {
			return first
		}
		if time.Now().After(deadline) {
			t.Fatal("the first request did not reach the verifier")
		}
	}
}

// TestHandlerAnswersAVerifierPastTheVerifyTimeoutWith503: a Verifier (conn.Verifier is any
// VerifierServiceClient) that gives up when WithVerifyTimeout ends returns the context's own
// error, not a gRPC status; the provider must still hear 503 with Retry-After and retry, not a
// 500 for a misconfigured edge.
func TestHandlerAnswersAVerifierPastTheVerifyTimeoutWith503(t *testing.T) {
	t.Parallel()
	v := newHeldVerifier() // never released: Verify ends with ctx.Err()
	srv, seen := heldHandler(t, v, client.WithVerifyTimeout(200*time.Millisecond))
	status, retryAfter, err := post(t, srv.URL+"/hooks/ep", strings.NewReader(`{"id":"evt_1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if status != http.StatusServiceUnavailable || retryAfter == "" {
		t.Errorf("a Verify cut by the verify timeout: %d (Retry-After %q), want 503 with Retry-After", status, retryAfter)
	}
	if o := seen.last(); o.Code != codes.DeadlineExceeded || !o.CalledVerifier {
		t.Errorf("Outcome.Code %v, CalledVerifier %v; want DeadlineExceeded, true", o.Code, o.CalledVerifier)
	}
}

// TestHandlerAnswersAnOversizedContentLengthWith413WhileTheBoundIsFull: a Content-Length over
// the body limit is answered 413 unread, so it reserves nothing; reserving it all the same, it
// was answered 503 whenever the bound was nearly full, and the provider retried, for ever, a
// delivery that can never pass.
func TestHandlerAnswersAnOversizedContentLengthWith413WhileTheBoundIsFull(t *testing.T) {
	t.Parallel()
	v := newHeldVerifier()
	conn := dial(t, "127.0.0.1:1", client.WithMaxBodyBytes(1<<10))
	conn.Verifier = v
	srv := httptest.NewServer(client.Handler(conn, client.EndpointFromPath("/hooks/"),
		client.WithLogger(slog.New(slog.DiscardHandler)), client.WithMaxBytesInFlight(64<<10)))
	t.Cleanup(srv.Close)
	first := holdOneHead(t, srv, v, 63<<10) // about 1 KiB of the bound left
	status, _, err := post(t, srv.URL+"/hooks/ep", bytes.NewReader(bytes.Repeat([]byte("x"), 2<<10)))
	if err != nil || status != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 KiB Content-Length over a 1 KiB body limit, the bound nearly full: %d, %v; want 413", status, err)
	}
	close(v.release)
	if s := <-first; s != 200 {
		t.Errorf("the first request: %d, want 200", s)
	}
}

// TestHandlerCountsTheRequestTargetInTheBound: the request target (a URL of up to the server's
// header limit) is held like the headers while a call waits, and counts in the bound too.
func TestHandlerCountsTheRequestTargetInTheBound(t *testing.T) {
	t.Parallel()
	v := newHeldVerifier()
	srv, _ := heldHandler(t, v, client.WithMaxBytesInFlight(64<<10))
	first := holdOneHead(t, srv, v, 40<<10)
	req, _ := http.NewRequest("POST", srv.URL+"/hooks/ep?pad="+strings.Repeat("q", 40<<10), nil)
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		t.Errorf("a 40 KiB request target past a 64 KiB bound: %v, want 503", err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("a 40 KiB request target past a 64 KiB bound: %d, want 503", resp.StatusCode)
		}
	}
	close(v.release)
	<-first
}

// TestHandlerClosesTheConnectionOfABodyRefusedAtTheBound: a request refused at the bound is
// answered with its body unread; the answer says Connection: close, rather than net/http
// reading (up to 256 KiB of) the body the handler just refused to hold.
func TestHandlerClosesTheConnectionOfABodyRefusedAtTheBound(t *testing.T) {
	t.Parallel()
	v := newHeldVerifier()
	srv, _ := heldHandler(t, v, client.WithMaxBytesInFlight(64<<10))
	first := holdOneHead(t, srv, v, 40<<10)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	const size = 30 << 10
	fmt.Fprintf(c, "POST /hooks/ep HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", size, strings.Repeat("x", size))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !resp.Close {
		t.Errorf("a 30 KiB body past a 64 KiB bound: %d, Connection: close %v; want 503 closing the connection", resp.StatusCode, resp.Close)
	}
	close(v.release)
	<-first
}
