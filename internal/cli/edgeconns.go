package cli

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultEdgeMaxConnections is `hookverify edge --max-connections`'s default. Each connection
// may hold up to --max-bytes-in-flight's share only once its request reaches the handler:
// before that, net/http reads its headers (up to MaxHeaderBytes, 272 KiB) on its own, so the
// connections open at once bound that memory too (1,024 of them, about 280 MiB at worst).
const DefaultEdgeMaxConnections = 1024

// connectionLimit counts the connections a listener serves and, with max above 0, serves at
// most max at once: past it, Accept waits for one to close, and new connections wait in the
// kernel's backlog (a provider sees a slow answer, times out and retries, as it does for any overloaded
// receiver). Without a limit, anyone on the internet could open connections until the edge
// ran out of file descriptors or memory, and then no provider got through at all.
//
// Keep-alive connections idle between requests would hold their slots for the whole idle
// timeout (60 s), so that anyone could keep the edge at the limit with connections that
// send one request each and then nothing. At the limit, a new connection therefore takes the
// slot of the connection idle the longest, closing it (trackState learns which are idle from
// http.Server.ConnState), once it has been idle for edgeIdleGrace, and waits while none has.
// Closing an idle keep-alive connection is what the idle timeout does anyway; HTTP clients
// expect it. A connection reading or answering a request is never closed.
type connectionLimit struct {
	net.Listener
	slots chan struct{} // nil: no limit
	done  chan struct{}
	once  sync.Once
	m     *connectionMetrics
	// full is told of each connection that waits for a slot (the edge logs it, rate-limited).
	full func()

	mu sync.Mutex
	// idle holds the connections idle between requests, with the time each became idle.
	idle map[*limitedConn]time.Time
	// becameIdle is told (without blocking) when a connection becomes idle.
	becameIdle chan struct{}
	// grace is how long a connection must have been idle for its slot to be taken
	// (edgeIdleGrace; tests shorten it).
	grace time.Duration
}

// edgeIdleGrace is how long a connection must have been idle before a new one may take its
// slot. ConnState's StateIdle does not mean the answer is out: net/http's HTTP/2 server reports
// it when the frame ending the last stream's answer is in its write buffer, before the flush
// that sends it, and as soon as it has read a new connection's preface, before its first
// request; an HTTP/1.1 client sending deliveries one after another on its connection has the
// next one on the way a round trip after each answer. A wait that closed a connection the
// moment it became idle lost that answer (a delivery stored, reported to the provider as a
// broken connection) or that request. A second is how long net/http's HTTP/2 server itself
// allows a round trip before it closes a connection it has told to go away; an attacker's
// idle connections still give up their slots within it, not the 60 s idle timeout.
const edgeIdleGrace = time.Second

// connectionMetrics are a connectionLimit's: the connections served (open), those that waited
// for a slot (waits), and the time Accept has spent waiting for one (waiting), a wait still
// going on included. waits rises once per wait, however long it lasts and however many
// connections queue in the backlog behind it: an edge held at the limit for good shows in
// waiting alone.
type connectionMetrics struct {
	open    prometheus.Gauge
	waits   prometheus.Counter
	waiting waitClock
	// idleClosed counts idle keep-alive connections closed to give their slot to a new one.
	idleClosed prometheus.Counter
}

func newConnectionMetrics() *connectionMetrics {
	return &connectionMetrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookverify_edge_connections_open",
			Help: "Connections open on --listen."}),
		waits: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_edge_connection_limit_waits_total",
			Help: "Connections that waited to be accepted because --max-connections were open."}),
		idleClosed: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_edge_idle_connections_closed_total",
			Help: "Idle keep-alive connections closed at --max-connections to accept a new one."}),
	}
}

// collectors are the metrics to register, the waiting time as a counter read when scraped.
func (m *connectionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.open, m.waits, m.idleClosed, prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "hookverify_edge_connection_limit_wait_seconds_total",
		Help: "Seconds the edge has spent at --max-connections, waiting to accept a connection, a wait under way included.",
	}, m.waiting.seconds)}
}

// waitClock sums the time spent in waits, counting a wait under way up to now.
type waitClock struct {
	mu    sync.Mutex
	total time.Duration
	since time.Time // start of the wait under way; zero when none
}

func (w *waitClock) start() {
	w.mu.Lock()
	w.since = time.Now()
	w.mu.Unlock()
}

func (w *waitClock) stop() {
	w.mu.Lock()
	w.total += time.Since(w.since)
	w.since = time.Time{}
	w.mu.Unlock()
}

func (w *waitClock) seconds() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.total
	if !w.since.IsZero() {
		d += time.Since(w.since)
	}
	return d.Seconds()
}

func limitConnections(l net.Listener, max int, m *connectionMetrics, full func()) *connectionLimit {
	limit := &connectionLimit{Listener: l, done: make(chan struct{}), m: m, full: full}
	if max > 0 {
		limit.slots = make(chan struct{}, max)
		limit.idle = make(map[*limitedConn]time.Time)
		limit.becameIdle = make(chan struct{}, 1)
		limit.grace = edgeIdleGrace
	}
	return limit
}

// trackState is the http.Server's ConnState: it keeps the set of connections idle between
// requests. Over TLS the server's connection is the *tls.Conn around the one Accept returned.
func (l *connectionLimit) trackState(c net.Conn, state http.ConnState) {
	if l.slots == nil {
		return
	}
	h2 := false
	if tc, ok := c.(*tls.Conn); ok {
		// Asked only of a connection becoming idle (not on the hot path of every request's
		// states), and before taking l.mu, which limitedConn.Read takes under crypto/tls.
		h2 = state == http.StateIdle && tc.ConnectionState().NegotiatedProtocol == "h2"
		c = tc.NetConn()
	}
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if state != http.StateIdle {
		lc.readEndsIdle.Store(false)
		delete(l.idle, lc)
		return
	}
	l.idle[lc] = time.Now()
	// net/http's HTTP/1 server reports a connection active only once it has read the whole
	// header section of its next request: until then the connection stays "idle" while that
	// request arrives, and closing it would cut it. Each byte read starts its idleness again
	// instead (limitedConn.Read), so that only a connection silent for the grace is closed; one
	// sending a byte now and then still meets --read-header-timeout once net/http has its
	// first 4 (the idle timeout before). Not over HTTP/2, whose idle connections read PING and
	// WINDOW_UPDATE frames too: there a new stream is reported at once.
	lc.readEndsIdle.Store(!h2)
	select {
	case l.becameIdle <- struct{}{}:
	default:
	}
}

// closeIdlest closes the connection idle the longest, if it has been idle for the grace,
// giving its slot back, and reports whether it did; if it has not, it returns how long until
// it has (0 when no connection is idle). The connection is taken from the set under the lock
// that trackState marks a connection active under, so one net/http has started answering is
// not chosen. (One whose next request is arriving, not yet read, after a grace of silence, may
// be: the race every idle timeout has, which clients of keep-alive connections retry.)
func (l *connectionLimit) closeIdlest() (bool, time.Duration) {
	l.mu.Lock()
	var idlest *limitedConn
	var since time.Time
	for c, t := range l.idle {
		if idlest == nil || t.Before(since) {
			idlest, since = c, t
		}
	}
	if idlest == nil {
		l.mu.Unlock()
		return false, 0
	}
	if left := l.grace - time.Since(since); left > 0 {
		l.mu.Unlock()
		return false, left
	}
	delete(l.idle, idlest)
	l.mu.Unlock()
	idlest.Close()
	return true, 0
}

// Accept accepts a connection, then takes a slot for it, waiting while every one is taken
// (holding that one connection: the next wait in the kernel's backlog), and hands it out to
// give its slot back when closed.
func (l *connectionLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if l.slots == nil {
		// --max-connections 0: counted all the same, as hookverify_edge_connections_open
		// promises (a proxy in front that caps connections is why one sets 0).
		l.m.open.Inc()
		return &limitedConn{Conn: c, release: sync.OnceFunc(l.m.open.Dec)}, nil
	}
	select {
	case l.slots <- struct{}{}:
	default:
		if err := l.waitForSlot(); err != nil {
			c.Close()
			return nil, err
		}
	}
	l.m.open.Inc()
	lc := &limitedConn{Conn: c, limit: l}
	lc.release = sync.OnceFunc(func() {
		l.mu.Lock()
		delete(l.idle, lc)
		l.mu.Unlock()
		l.m.open.Dec()
		<-l.slots
	})
	return lc, nil
}

// waitForSlot takes a slot when every one is taken: that of the connection idle the longest,
// closing it once it has been idle for the grace, or else the first given back meanwhile.
func (l *connectionLimit) waitForSlot() error {
	closed, left := l.closeIdlest()
	if closed {
		l.m.idleClosed.Inc()
	}
	select {
	case l.slots <- struct{}{}:
		return nil
	default:
	}
	// The clock starts first: a scrape that finds the wait counted finds it timed too.
	l.m.waiting.start()
	defer l.m.waiting.stop()
	l.m.waits.Inc()
	l.full()
	// Looked at again when the idlest connection has been idle for the grace (graceEnds), and
	// when a connection becomes idle (starting that clock if none was idle).
	for {
		var graceEnds <-chan time.Time
		if left > 0 {
			graceEnds = time.After(left)
		}
		select {
		case l.slots <- struct{}{}:
			return nil
		case <-l.becameIdle:
		case <-graceEnds:
		case <-l.done:
			return net.ErrClosed
		}
		if closed, left = l.closeIdlest(); closed {
			l.m.idleClosed.Inc()
		}
	}
}

// Close stops an Accept waiting for a slot too: http.Server's Shutdown closes the listener
// and waits for Serve, which would otherwise wait on the slot for ever.
func (l *connectionLimit) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitedConn gives its slot back once, at its first Close (net/http and crypto/tls may both
// close it).
type limitedConn struct {
	net.Conn
	release func()
	// limit is the connectionLimit whose idle set the connection is in while idle (nil
	// without a limit); readEndsIdle is set while it is an idle HTTP/1 connection, whose bytes
	// read are its next request arriving (see trackState).
	limit        *connectionLimit
	readEndsIdle atomic.Bool
}

// Read restarts the idleness of an idle HTTP/1 connection as bytes of its next request arrive,
// so that it is not closed for a new connection while they do.
func (c *limitedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && c.readEndsIdle.Load() {
		c.limit.mu.Lock()
		if _, idle := c.limit.idle[c]; idle {
			c.limit.idle[c] = time.Now()
		}
		c.limit.mu.Unlock()
	}
	return n, err
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.release()
	return err
}

// CloseWrite half-closes the connection it wraps, as *net.TCPConn does. net/http looks for it
// by a type assertion when it answers a request whose body it will not read (413, a 503 at
// --max-bytes-in-flight mid-body, 431): it sends a FIN, so the client still uploading reads
// the answer and its end, and closes 500 ms later. Without it the embedded net.Conn hid the
// method, no FIN was sent, and only the reset of that close ended the exchange.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
