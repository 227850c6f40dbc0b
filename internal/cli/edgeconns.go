package cli

import (
	"errors"
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultEdgeMaxConnections is `hookverify edge --max-connections`'s default. Each connection
// may hold up to --max-bytes-in-flight's share only once its request reaches the handler:
// before that, net/http reads its headers (up to MaxHeaderBytes, 272 KiB) on its own, so the
// connections open at once bound that memory too (1,024 of them, about 280 MiB at worst).
const DefaultEdgeMaxConnections = 1024

// connectionLimit makes a listener serve at most max connections at once: past it, Accept
// waits for one to close, and new connections wait in the kernel's backlog (a
// provider sees a slow answer, times out and retries, as it does for any overloaded
// receiver). Without a limit, anyone on the internet could open connections until the edge
// ran out of file descriptors or memory, and then no provider got through at all.
type connectionLimit struct {
	net.Listener
	slots chan struct{}
	done  chan struct{}
	once  sync.Once
	// open counts the connections served; waits the connections that waited for a slot, and
	// full is told of each (the edge logs it, rate-limited).
	open  prometheus.Gauge
	waits prometheus.Counter
	full  func()
}

func limitConnections(l net.Listener, max int, open prometheus.Gauge, waits prometheus.Counter, full func()) *connectionLimit {
	return &connectionLimit{Listener: l, slots: make(chan struct{}, max), done: make(chan struct{}),
		open: open, waits: waits, full: full}
}

// Accept accepts a connection, then takes a slot for it, waiting while every one is taken
// (holding that one connection: the next wait in the kernel's backlog), and hands it out to
// give its slot back when closed.
func (l *connectionLimit) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	select {
	case l.slots <- struct{}{}:
	default:
		l.waits.Inc()
		l.full()
		select {
		case l.slots <- struct{}{}:
		case <-l.done:
			c.Close()
			return nil, net.ErrClosed
		}
	}
	l.open.Inc()
	return &limitedConn{Conn: c, release: sync.OnceFunc(func() {
		l.open.Dec()
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
