package cli

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestConnectionLimitKeepsAnHTTP2AnswerBeingWritten: net/http's HTTP/2 server reports a
// connection idle (ConnState) when its last stream closes, which is when the frame ending
// the answer has gone into the connection's write buffer, before that buffer is flushed to
// the socket. An Accept waiting at --max-connections closed the connection on that report,
// so the answer of a delivery the verifier had just stored never reached the provider, which
// saw a broken connection (and retried, or counted a failure). The report is delayed here on
// the serving goroutine, as a busy scheduler may delay the flush after it.
func TestConnectionLimitKeepsAnHTTP2AnswerBeingWritten(t *testing.T) {
	waiting := make(chan struct{})
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitConnections(inner, 1, newConnectionMetrics(), func() { close(waiting) })
	started, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(started)
		<-release
		io.WriteString(w, "stored")
	}))
	srv.Listener = l
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(c net.Conn, state http.ConnState) {
		l.trackState(c, state)
		if state == http.StateIdle {
			time.Sleep(200 * time.Millisecond)
		}
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	answered := make(chan error, 1)
	var answer string
	go func() {
		resp, err := srv.Client().Post(srv.URL+"/hooks/shop", "application/json", nil)
		if err == nil {
			var body []byte
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			answer = resp.Proto + " " + string(body)
		}
		answered <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request did not reach the handler")
	}
	// A second connection waits for the slot the delivery's connection holds.
	c, err := net.Dial("tcp", inner.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	select {
	case <-waiting:
	case <-time.After(10 * time.Second):
		t.Fatal("the second connection did not wait at the limit")
	}
	close(release)
	select {
	case err := <-answered:
		if err != nil || answer != "HTTP/2.0 stored" {
			t.Fatalf("the answer written as the second connection waited: %q, %v; want HTTP/2.0 stored", answer, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
}

// TestConnectionLimitLeavesAConnectionIdleUnderTheGrace: an Accept at the limit takes the slot
// of an idle connection only once it has been idle for the grace (a connection just reported
// idle may still have its answer to flush, or its next request on the way), and then without
// waiting for anything else: a connection becoming idle while the Accept waits starts the
// clock too.
func TestConnectionLimitLeavesAConnectionIdleUnderTheGrace(t *testing.T) {
	waited := make(chan struct{}, 2)
	l, m, addr := newTestLimit(t, 1, func() { waited <- struct{}{} })
	const grace = 300 * time.Millisecond
	l.grace = grace
	for round, idleBeforeTheWait := range []bool{true, false} {
		client, served := dialAccepted(t, l, addr)
		// start is taken before the connection becomes idle: the grace counts from then.
		start := time.Now()
		if idleBeforeTheWait {
			l.trackState(served, http.StateIdle)
		}
		dial(t, addr)
		accepted := make(chan error, 1)
		go func() {
			c, err := l.Accept()
			if err == nil {
				// Given back to the next round's Accept, which dials a connection of its own.
				t.Cleanup(func() { c.Close() })
				c.Close()
			}
			accepted <- err
		}()
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the Accept did not wait for a connection idle under the grace", round)
		}
		if !idleBeforeTheWait {
			time.Sleep(grace / 3)
			start = time.Now()
			l.trackState(served, http.StateIdle)
		}
		client.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("round %d: the idle connection read %v, want EOF (closed for the Accept)", round, err)
		}
		if d := time.Since(start); d < grace {
			t.Errorf("round %d: the idle connection was closed %v after it became idle, under the %v grace", round, d, grace)
		}
		if err := <-accepted; err != nil {
			t.Fatalf("round %d: Accept: %v", round, err)
		}
	}
	var closed dto.Metric
	if err := m.idleClosed.Write(&closed); err != nil || closed.GetCounter().GetValue() != 2 {
		t.Errorf("idle connections closed = %v, %v; want 2", closed.GetCounter().GetValue(), err)
	}
}
