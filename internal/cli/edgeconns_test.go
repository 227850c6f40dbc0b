package cli

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestEdgeBoundsItsConnections: the edge accepted every connection anyone opened, so
// connections that sent nothing (or headers, slowly) could take every file descriptor and the
// memory of their headers, and no provider got through. Past --max-connections a new
// connection waits to be accepted until one closes, counted and logged.
func TestEdgeBoundsItsConnections(t *testing.T) {
	_, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--verifier", addr,
		"--max-connections", "2", "--read-header-timeout", "1m")
	line := edge.log.logLine(t, "edge listening")
	base, metricsURL := "http://"+line["addr"].(string), "http://"+line["metrics_addr"].(string)+"/metrics"

	idle := dialIdle(t, line["addr"].(string), 2)
	answered := make(chan error, 1)
	go func() {
		resp, err := http.Get(base + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	// Both slots are held by connections that send nothing: the request waits, counted.
	waitForMetric(t, metricsURL, "hookverify_edge_connection_limit_waits_total 1")
	metrics := get(t, metricsURL)
	if !strings.Contains(metrics, "hookverify_edge_connections_open 2") {
		t.Errorf("/metrics does not count 2 connections open:\n%s", metrics)
	}
	if !strings.Contains(metrics, "hookverify_edge_connection_limit_wait_seconds_total ") ||
		strings.Contains(metrics, "hookverify_edge_connection_limit_wait_seconds_total 0\n") {
		t.Errorf("/metrics does not count the wait under way in the waiting time:\n%s", metrics)
	}
	select {
	case err := <-answered:
		t.Fatalf("a third connection was served while two were open at --max-connections 2 (%v)", err)
	default:
	}
	edge.log.logLine(t, "holding --max-connections connections open, none idle for 1s; new ones wait to be accepted")

	idle[0].Close()
	select {
	case err := <-answered:
		if err != nil {
			t.Fatalf("the waiting request, once a connection closed: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting request was not served after a connection closed")
	}
	idle[1].Close()
}

// TestConnectionLimitCloseEndsAWaitingAccept: http.Server's Shutdown closes the listener and
// waits for Serve to return, so an Accept waiting for a slot must end at Close, closing the
// connection it holds, or the edge would never stop while at --max-connections.
func TestConnectionLimitCloseEndsAWaitingAccept(t *testing.T) {
	waiting := make(chan struct{})
	l, m, addr := newTestLimit(t, 1, func() { close(waiting) })
	accepted := fillAndWait(t, l, addr)
	<-waiting
	// The wait under way counts in the waiting time before it ends: an edge held at the limit
	// for good shows there, though its count of waits stays at one.
	deadline := time.Now().Add(10 * time.Second)
	for m.waiting.seconds() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a wait under way is not counted in the waiting time")
		}
		time.Sleep(time.Millisecond)
	}
	l.Close()
	select {
	case err := <-accepted:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("the waiting Accept ended with %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the Accept waiting for a slot")
	}
	ended := m.waiting.seconds()
	time.Sleep(5 * time.Millisecond)
	if after := m.waiting.seconds(); after != ended {
		t.Errorf("the waiting time grew from %v to %v s after the wait ended", ended, after)
	}
}

// dialIdle opens n connections to addr that send nothing, closed when t ends.
func dialIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns
}

// waitForMetric waits, at most 10 s, until the metrics at url hold the line want.
func waitForMetric(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(get(t, url), want) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics does not come to hold %q:\n%s", want, get(t, url))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// fillAndWait dials two connections to l, a limit of one connection at addr, accepts the
// first, and starts an Accept of the second, which waits for the first's slot; its error comes
// on the channel returned.
func fillAndWait(t *testing.T, l *connectionLimit, addr string) <-chan error {
	t.Helper()
	dialAccepted(t, l, addr)
	dial(t, addr)
	accepted := make(chan error, 1)
	go func() {
		_, err := l.Accept()
		accepted <- err
	}()
	return accepted
}

// newTestLimit wraps a loopback listener in a connectionLimit of max connections (0: none),
// closed when t ends, and returns it with its metrics and the address to dial.
func newTestLimit(t *testing.T, max int, full func()) (*connectionLimit, *connectionMetrics, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := newConnectionMetrics()
	l := limitConnections(inner, max, m, full)
	t.Cleanup(func() { l.Close() })
	return l, m, inner.Addr().String()
}

// dial opens a connection to addr, closed when t ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialAccepted opens a connection to l at addr and accepts it, both ends closed when t ends:
// the client's end, and the one l served.
func dialAccepted(t *testing.T, l *connectionLimit, addr string) (client, served net.Conn) {
	t.Helper()
	client = dial(t, addr)
	served, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { served.Close() })
	return client, served
}

func TestEdgeRefusesNegativeMaxConnections(t *testing.T) {
	err := runEdge(t.Context(), env{stdin: strings.NewReader(""), stdout: &strings.Builder{}, stderr: &strings.Builder{}},
		[]string{"--max-connections", "-1"})
	if err == nil || !strings.Contains(err.Error(), "--max-connections -1") {
		t.Fatalf("--max-connections -1: %v, want a usage error naming it", err)
	}
}

// TestEdgeClosesAnIdleConnectionAtTheLimit: keep-alive connections idle between requests held
// their slots for the 60 s idle timeout, so a client sending one request on each of
// --max-connections connections kept every provider out for a minute at a time. At the limit
// a new connection now takes the slot of an idle one, closing it; one answering a request is
// never closed.
func TestEdgeClosesAnIdleConnectionAtTheLimit(t *testing.T) {
	v, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--verifier", addr,
		"--max-connections", "2", "--verifier-timeout", "1m", "--write-timeout", "0")
	line := edge.log.logLine(t, "edge listening")
	base, metricsURL := "http://"+line["addr"].(string), "http://"+line["metrics_addr"].(string)+"/metrics"
	// Each client its own transport, so each holds its own connection.
	newClient := func() *http.Client { return &http.Client{Transport: &http.Transport{}} }
	healthz := func(c *http.Client) error {
		resp, err := c.Get(base + "/healthz")
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return err
	}

	active := make(chan error, 1)
	go func() {
		resp, err := newClient().Post(base+"/hooks/shop", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
		}
		active <- err
	}()
	select {
	case <-v.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the delivery did not reach the verifier")
	}
	keptAlive := newClient()
	if err := healthz(keptAlive); err != nil {
		t.Fatal(err)
	}
	// Both slots are taken: one by a delivery under way, one by a connection kept alive.
	newcomer := make(chan error, 1)
	go func() { newcomer <- healthz(newClient()) }()
	select {
	case err := <-newcomer:
		if err != nil {
			t.Fatalf("the new connection at the limit: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a new connection waited at --max-connections while one of the two open was idle")
	}
	// (A wait may be counted too: the kept-alive connection's answer can reach its client just
	// before net/http marks it idle, and the new connection then waits until it is.)
	waitForMetric(t, metricsURL, "hookverify_edge_idle_connections_closed_total 1")
	v.finish()
	if err := <-active; err != nil {
		t.Errorf("the delivery under way when the limit was reached: %v", err)
	}
	// The client whose idle connection was closed opens another, as clients do.
	if err := healthz(keptAlive); err != nil {
		t.Errorf("the client whose idle connection was closed, again: %v", err)
	}
}

// TestConnectionLimitTakesTheSlotOfTheIdlest: the connection idle the longest is closed first;
// one that became active again is not; over TLS net/http reports the *tls.Conn around the
// connection Accept returned.
func TestConnectionLimitTakesTheSlotOfTheIdlest(t *testing.T) {
	l, _, addr := newTestLimit(t, 3, func() { t.Error("an Accept waited with a connection idle") })
	l.grace = 0 // the order alone; the grace is TestConnectionLimitLeavesAConnectionIdleUnderTheGrace's
	var served, clients [3]net.Conn
	for i := range served {
		clients[i], served[i] = dialAccepted(t, l, addr)
	}
	l.trackState(tls.Server(served[0], &tls.Config{}), http.StateIdle)
	time.Sleep(2 * time.Millisecond)
	l.trackState(served[1], http.StateIdle)
	time.Sleep(2 * time.Millisecond)
	l.trackState(tls.Server(served[2], &tls.Config{}), http.StateIdle)
	l.trackState(served[0], http.StateActive) // its next request came in

	// Read by the clients: a closed connection reads EOF at once, an open one times out.
	closed := func(i int) bool {
		clients[i].SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := clients[i].Read(make([]byte, 1))
		return errors.Is(err, io.EOF)
	}
	for round, want := range [][3]bool{{false, true, false}, {false, true, true}} {
		dialAccepted(t, l, addr)
		for i, w := range want {
			if got := closed(i); got != w {
				t.Errorf("after accept %d, connection %d closed: %v, want %v", round+1, i, got, w)
			}
		}
	}
}
