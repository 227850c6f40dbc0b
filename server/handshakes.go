package server

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"syscall"
	"time"

	"google.golang.org/grpc/credentials"

	"github.com/hookverify/hookverify/internal/ratelog"
)

// handshakeLogInterval bounds how often failed TLS handshakes are logged: a scanner or a
// misconfigured fleet can fail thousands a second, and one line per interval, with the count
// of those not logged, says as much.
const handshakeLogInterval = 10 * time.Second

// ObserveHandshakes returns creds reporting each failed server handshake: counted in
// hookverify_tls_handshake_failures_total and logged at most once per handshakeLogInterval.
// Without it they are silent (gRPC logs them only at its own verbose level), so a caller
// with an expired or untrusted client certificate, or one speaking plaintext, was invisible
// from the server's side.
func (s *Server) ObserveHandshakes(creds credentials.TransportCredentials) credentials.TransportCredentials {
	return &observedCredentials{TransportCredentials: creds, log: &handshakeLog{logger: s.log, metrics: s.metrics, limit: ratelog.ForLog(s.log, handshakeLogInterval, "TLS handshakes failed")}}
}

type observedCredentials struct {
	credentials.TransportCredentials
	log *handshakeLog
}

func (c *observedCredentials) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	out, info, err := c.TransportCredentials.ServerHandshake(conn)
	if err != nil {
		c.log.failed(conn.RemoteAddr(), err)
	}
	return out, info, err
}

func (c *observedCredentials) Clone() credentials.TransportCredentials {
	return &observedCredentials{TransportCredentials: c.TransportCredentials.Clone(), log: c.log}
}

// handshakeLog counts failed handshakes and logs them, rate-limited.
type handshakeLog struct {
	logger  *slog.Logger
	metrics *Metrics
	limit   *ratelog.Limiter
}

func (h *handshakeLog) failed(remote net.Addr, err error) {
	h.metrics.observeHandshakeFailure()
	if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) {
		// A connection closed before it sent anything: a TCP health check or a port probe.
		// Counted, not logged: load balancers do this every few seconds, and many (HAProxy
		// among them) close with a reset rather than a FIN, to spare TIME_WAIT sockets. A
		// client that refuses a handshake it started (an untrusted certificate) sends an
		// alert instead, which is logged.
		return
	}
	ok, heldBack := h.limit.Allow()
	if !ok {
		return
	}
	addr := ""
	if remote != nil {
		addr = remote.String()
	}
	h.logger.Warn("TLS handshake failed", "remote", addr, "err", err, "not_logged_since_last", heldBack)
}
