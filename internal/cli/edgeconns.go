package cli

import (
	"errors"
	"net"
	"sync"
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
type connectionLimit struct {
	net.Listener
	slots chan struct{} // nil: no limit
	done  chan struct{}
	once  sync.Once
	m     *connectionMetrics
	// full is told of each connection that waits for a slot (the edge logs it, rate-limited).
	full func()
}

// connectionMetrics are a connectionLimit's: the connections served (open), those that waited
// for a slot (waits), and the time Accept has spent waiting for one (waiting), a wait still
// going on included. waits rises once per wait, however long it lasts and however many
// connections queue in the backlog behind it: an edge held at the limit for good shows in
// waiting alone.
type connectionMetrics struct {
	open    prometheus.Gauge
	waits   prometheus.Counter
	waiting waitClock
}

func newConnectionMetrics() *connectionMetrics {
	return &connectionMetrics{
		open: prometheus.NewGauge(prometheus.GaugeOpts{Name: "hookverify_edge_connections_open",
			Help: "Connections open on --listen."}),
		waits: prometheus.NewCounter(prometheus.CounterOpts{Name: "hookverify_edge_connection_limit_waits_total",
			Help: "Connections that waited to be accepted because --max-connections were open."}),
	}
}

// collectors are the metrics to register, the waiting time as a counter read when scraped.
func (m *connectionMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.open, m.waits, prometheus.NewCounterFunc(prometheus.CounterOpts{
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
	}
	return limit
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
		// The clock starts first: a scrape that finds the wait counted finds it timed too.
		l.m.waiting.start()
		l.m.waits.Inc()
		l.full()
		select {
		case l.slots <- struct{}{}:
			l.m.waiting.stop()
		case <-l.done:
			l.m.waiting.stop()
			c.Close()
			return nil, net.ErrClosed
		}
	}
	l.m.open.Inc()
	return &limitedConn{Conn: c, release: sync.OnceFunc(func() {
		l.m.open.Dec()
		<-l.slots
	})}, nil
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
