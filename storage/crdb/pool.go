package crdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/puddle/v2"
)

// errPoolClosed is what acquire returns once the store is closed; the store reports ErrClosed.
var errPoolClosed = errors.New("crdb: connection pool closed")

// Pool settings. pgxpool pings a connection that has idled for over a second before lending it
// (its default ShouldPing), so connections broken by a database restart are found and replaced
// before a statement fails on them; the health check closes idle ones on a period.
const (
	defaultMaxConns   = 10
	pingTimeout       = 2 * time.Second
	maxConnIdleTime   = 5 * time.Minute
	maxConnLifetime   = time.Hour
	healthCheckPeriod = 15 * time.Second
)

// newPoolConfig parses the URL into a pgxpool configuration with hookverify's defaults; the
// URL's pool_max_conns and connect_timeout, when present, win.
func newPoolConfig(databaseURL string) (*pgxpool.Config, error) {
	config, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	if !hasParam(databaseURL, "pool_max_conns") {
		config.MaxConns = defaultMaxConns
	}
	if config.ConnConfig.ConnectTimeout == 0 {
		// Without it a dial to an unreachable host waits for the kernel to give up.
		config.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	config.MaxConnIdleTime = maxConnIdleTime
	config.MaxConnLifetime = maxConnLifetime
	config.HealthCheckPeriod = healthCheckPeriod
	config.PingTimeout = pingTimeout
	return config, nil
}

// hasParam reports whether the connection string sets the named parameter (URL or key=value).
func hasParam(databaseURL, name string) bool {
	return strings.Contains(databaseURL, name+"=")
}

// pool wraps pgxpool so the store can tell "closed by us" from "database unreachable".
type pool struct {
	*pgxpool.Pool
}

func newPool(ctx context.Context, config *pgxpool.Config) (*pool, error) {
	p, err := pgxpool.NewWithConfig(ctx, config)
	if err != nil {
		return nil, fmt.Errorf("crdb: creating the connection pool: %w", err)
	}
	return &pool{p}, nil
}

// acquire lends a connection; release must be called with it.
func (p *pool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	conn, err := p.Acquire(ctx)
	if isPoolClosedError(err) {
		return nil, errPoolClosed
	}
	return conn, err
}

// release returns the connection; pgxpool destroys it if it is broken or still in a
// transaction, so a connection is never reused in an unknown state.
func (p *pool) release(conn *pgxpool.Conn) { conn.Release() }

func (p *pool) close() { p.Close() }

// isPoolClosedError recognises pgxpool's error for Acquire on a closed pool (puddle's sentinel).
func isPoolClosedError(err error) bool {
	return errors.Is(err, puddle.ErrClosedPool)
}
