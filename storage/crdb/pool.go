package crdb

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// errPoolClosed is what acquire returns once the pool is closed; the store reports ErrClosed.
var errPoolClosed = errors.New("crdb: connection pool closed")

// Pool limits and health checks. A connection idle for longer than pingAfterIdle is pinged
// before use, so that connections broken by a database restart are found and replaced before
// a statement fails on them.
const (
	defaultMaxConns = 10
	pingAfterIdle   = time.Second
	pingTimeout     = 2 * time.Second
	maxConnIdleTime = 5 * time.Minute
	maxConnLifetime = time.Hour
	closeTimeout    = time.Second
)

// pool is a small connection pool over pgx.Conn.
//
// It exists because pgxpool needs github.com/jackc/puddle/v2, which this module does not
// require; it keeps to the part of pgxpool's behaviour the store relies on so that switching
// to pgxpool later changes only this file: at most maxConns connections, ping after idling,
// and no reuse of a connection that is broken or left inside a transaction.
type pool struct {
	config *pgx.ConnConfig
	tokens chan struct{} // one per connection in use or being opened

	mu     sync.Mutex
	idle   []idleConn // most recently used last
	closed bool
}

type idleConn struct {
	conn      *pgx.Conn
	createdAt time.Time
	idleSince time.Time
}

// pooledConn is a connection lent by the pool; give it back with release.
type pooledConn struct {
	*pgx.Conn
	createdAt time.Time
}

func newPool(config *pgx.ConnConfig, maxConns int) *pool {
	return &pool{config: config, tokens: make(chan struct{}, maxConns)}
}

// acquire returns a healthy connection, opening one if none is idle. It waits for a free slot
// while maxConns connections are in use.
func (p *pool) acquire(ctx context.Context) (*pooledConn, error) {
	select {
	case p.tokens <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	for {
		ic, ok, err := p.popIdle()
		if err != nil {
			<-p.tokens
			return nil, err
		}
		if !ok {
			break
		}
		if p.healthy(ctx, ic) {
			return &pooledConn{Conn: ic.conn, createdAt: ic.createdAt}, nil
		}
		closeConn(ic.conn)
	}
	conn, err := pgx.ConnectConfig(ctx, p.config)
	if err != nil {
		<-p.tokens
		return nil, err
	}
	return &pooledConn{Conn: conn, createdAt: time.Now()}, nil
}

func (p *pool) popIdle() (idleConn, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return idleConn{}, false, errPoolClosed
	}
	if len(p.idle) == 0 {
		return idleConn{}, false, nil
	}
	ic := p.idle[len(p.idle)-1]
	p.idle = p.idle[:len(p.idle)-1]
	return ic, true, nil
}

// healthy reports whether an idle connection may be lent: not closed, not too old, and
// answering a ping if it has been idle long enough for the server to have gone away.
func (p *pool) healthy(ctx context.Context, ic idleConn) bool {
	now := time.Now()
	if ic.conn.IsClosed() || now.Sub(ic.createdAt) > maxConnLifetime || now.Sub(ic.idleSince) > maxConnIdleTime {
		return false
	}
	if now.Sub(ic.idleSince) < pingAfterIdle {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return ic.conn.Ping(ctx) == nil
}

// release gives a connection back. A connection that is broken, busy or still inside a
// transaction is closed instead; a broken one also closes every idle connection, since a
// connection usually breaks because the server restarted and the idle ones broke with it.
func (p *pool) release(pc *pooledConn) {
	defer func() { <-p.tokens }()
	conn := pc.Conn
	broken := conn.IsClosed()
	reusable := !broken && !conn.PgConn().IsBusy() && conn.PgConn().TxStatus() == 'I'
	p.mu.Lock()
	var discard []idleConn
	if broken {
		discard, p.idle = p.idle, nil
	}
	if reusable && !p.closed {
		p.idle = append(p.idle, idleConn{conn: conn, createdAt: pc.createdAt, idleSince: time.Now()})
	} else {
		discard = append(discard, idleConn{conn: conn})
	}
	p.mu.Unlock()
	for _, ic := range discard {
		closeConn(ic.conn)
	}
}

// close closes the idle connections and makes acquire fail. Connections in use are closed
// when they are released.
func (p *pool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, ic := range idle {
		closeConn(ic.conn)
	}
}

func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	_ = conn.Close(ctx)
}
