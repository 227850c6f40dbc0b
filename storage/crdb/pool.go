package crdb

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
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
// URL's own settings (pool_max_conns, pool_max_conn_lifetime, pool_max_conn_idle_time,
// pool_health_check_period, pool_ping_timeout, connect_timeout), when present, win: an
// operator sets one for a reason hookverify cannot see, a proxy that cuts connections after
// a few minutes say, and must not find it ignored.
func newPoolConfig(databaseURL string) (*pgxpool.Config, error) {
	config, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	// What the string sets, read as pgx reads it (key = value with spaces, a URL's
	// percent-encoded names): pgxpool takes its own settings out of the runtime parameters,
	// where pgconn leaves them. It parsed above, so it parses here.
	set, err := pgconn.ParseConfig(databaseURL)
	if err != nil {
		return nil, err
	}
	hasParam := func(name string) bool {
		_, ok := set.RuntimeParams[name]
		return ok
	}
	if !hasParam("pool_max_conns") {
		config.MaxConns = defaultMaxConns
	}
	if config.ConnConfig.ConnectTimeout == 0 {
		// Without it a dial to an unreachable host waits for the kernel to give up.
		config.ConnConfig.ConnectTimeout = defaultConnectTimeout
	}
	if !hasParam("pool_max_conn_idle_time") {
		config.MaxConnIdleTime = maxConnIdleTime
	}
	if !hasParam("pool_max_conn_lifetime") {
		config.MaxConnLifetime = maxConnLifetime
	}
	if !hasParam("pool_health_check_period") {
		config.HealthCheckPeriod = healthCheckPeriod
	}
	if !hasParam("pool_ping_timeout") {
		config.PingTimeout = pingTimeout
	}
	return config, nil
}

// urlProblem says what is likely wrong with a connection string pgx could not parse, without
// quoting any of it: a fragment of a URL that failed to parse can be a piece of the password
// (an unencoded "#" in it starts a fragment, and what came before the "#" reads as a port).
func urlProblem(databaseURL string) string {
	scheme, _, isURL := strings.Cut(databaseURL, "://")
	if !isURL {
		if strings.HasPrefix(databaseURL, "postgres") {
			return "a URL starts with postgres:// or postgresql://"
		}
		return "check its key=value pairs: quote a value with spaces in single quotes, as password='a b', and check sslmode (disable, allow, prefer, require, verify-ca or verify-full) and numbers such as port and connect_timeout"
	}
	if scheme != "postgres" && scheme != "postgresql" {
		return "its scheme must be postgres:// or postgresql://, for CockroachDB too"
	}
	const encode = "in the user name and password, percent-encode @ : / ? # % and spaces (%40 %3A %2F %3F %23 %25 %20)"
	u, err := url.Parse(databaseURL)
	if err != nil {
		if strings.Contains(err.Error(), "invalid port") {
			return "its port is not a number, or " + encode
		}
		return "it is not a valid URL: " + encode
	}
	if port := u.Port(); port != "" {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return "its port is not a number from 0 to 65535"
		}
	}
	if _, err := url.ParseQuery(u.RawQuery); err != nil {
		return "its query parameters are not validly percent-encoded: percent-encode % & = and spaces in their values (%25 %26 %3D %20)"
	}
	return "check its query parameters: sslmode (disable, allow, prefer, require, verify-ca or verify-full), numbers such as connect_timeout and pool_max_conns, and the sslcert/sslkey/sslrootcert files"
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
