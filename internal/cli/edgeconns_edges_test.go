package cli

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"net/http"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/testpki"
	dto "github.com/prometheus/client_model/go"
)

// TestConnectionLimitTellsHTTPSOneFromHTTP2WhenIdle: over TLS, an idle connection that
// negotiated HTTP/1.1 has the bytes it reads restart its idleness (they are its next request
// arriving, which closing it would cut), and one that negotiated h2 does not (it reads PING
// and WINDOW_UPDATE frames while idle, which must not keep its slot from a new connection).
func TestConnectionLimitTellsHTTPSOneFromHTTP2WhenIdle(t *testing.T) {
	ca := testpki.NewCA(t, "limit CA")
	cert := ca.Issue(t, testpki.Leaf{Subject: pkix.Name{CommonName: "127.0.0.1"}, Server: true})
	for _, proto := range []string{"http/1.1", "h2"} {
		t.Run(proto, func(t *testing.T) {
			l, _, addr := newTestLimit(t, 2, func() {})
			clientConn, served := dialAccepted(t, l, addr)
			srv := tls.Server(served, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{proto}})
			cli := tls.Client(clientConn, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", NextProtos: []string{proto}})
			errs := make(chan error, 1)
			go func() { errs <- cli.Handshake() }()
			if err := srv.Handshake(); err != nil {
				t.Fatal(err)
			}
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if got := srv.ConnectionState().NegotiatedProtocol; got != proto {
				t.Fatalf("negotiated %q, want %q", got, proto)
			}
			l.trackState(srv, http.StateIdle)
			lc := served.(*limitedConn)
			l.mu.Lock()
			_, idle := l.idle[lc]
			l.mu.Unlock()
			if !idle {
				t.Fatal("the idle TLS connection is not in the idle set")
			}
			if want := proto != "h2"; lc.readEndsIdle.Load() != want {
				t.Errorf("over %s, bytes read restart the idleness: %v, want %v", proto, !want, want)
			}
		})
	}
}

// TestConnectionLimitCountsAnIdleConnectionClosedAtOnce: a new connection at the limit that
// takes the slot of a connection already idle for the grace, without waiting, is counted in
// hookverify_edge_idle_connections_closed_total like one that took it after a wait.
func TestConnectionLimitCountsAnIdleConnectionClosedAtOnce(t *testing.T) {
	l, m, addr := newTestLimit(t, 1, func() {})
	l.grace = 0 // every idle connection has been idle for the grace
	_, served := dialAccepted(t, l, addr)
	l.trackState(served, http.StateIdle)
	dialAccepted(t, l, addr)
	var got dto.Metric
	if err := m.idleClosed.Write(&got); err != nil {
		t.Fatal(err)
	}
	if n := got.GetCounter().GetValue(); n != 1 {
		t.Errorf("hookverify_edge_idle_connections_closed_total = %v, want 1", n)
	}
}

// TestConnectionLimitWaitSecondsSumEveryWait: hookverify_edge_connection_limit_wait_seconds_total
// adds up every wait at --max-connections, not the last one alone.
func TestConnectionLimitWaitSecondsSumEveryWait(t *testing.T) {
	var w waitClock
	for range 2 {
		w.start()
		w.mu.Lock()
		w.since = w.since.Add(-time.Second) // a wait of (at least) a second
		w.mu.Unlock()
		w.stop()
	}
	if s := w.seconds(); s < 2 {
		t.Errorf("two waits of a second each sum to %v s, want at least 2", s)
	}
}
