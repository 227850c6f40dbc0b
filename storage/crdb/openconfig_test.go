package crdb

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestOpenRefusesAConfigurationTheDatabaseRejects: a database that answers, but refuses the
// URL's user, database, schema or privileges, will refuse it on every attempt; Open must say
// so at once as ErrInvalid (serve then stops, exit 1) naming the cause, rather than
// ErrUnavailable, which serve retries for ever with a warning that reads like an outage. The
// URL's password must not be in the error.
func TestOpenRefusesAConfigurationTheDatabaseRejects(t *testing.T) {
	cluster := pgtest.Shared(t)
	dbURL := cluster.NewDatabase(t)
	admin := connect(t, dbURL)
	const password = "Pw-N0t-To-B3-Logged"
	// A role that may connect (PUBLIC has CONNECT) but, since PostgreSQL 15, not create in
	// the public schema of a database it does not own.
	role := loginRole(t, admin, dbURL, "hv_nocreate", "")
	with := func(user, dbname, query string) string {
		u, err := neturl.Parse(dbURL)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			u.User = neturl.UserPassword(user, password)
		}
		if dbname != "" {
			u.Path = "/" + dbname
		}
		q := u.Query()
		for k, v := range mustParseQuery(t, query) {
			q[k] = v
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	for _, c := range []struct{ name, url, code, says string }{
		{"no such role", with("hv_no_such_role", "", ""), "28000", "refused the user"},
		{"no such database", with("", "hv_no_such_database", ""), "3D000", "does not exist"},
		{"no CREATE on the schema", with(role, "", ""), "42501", "privilege"},
		{"search_path names no schema", with("", "", "search_path=hv_no_such_schema"), "3F000", "schema"},
		// pgx sends a query parameter it does not know to the server as a setting.
		{"a misspelled parameter", with("", "", "sslmod=disable"), "42704", "parameter"},
		{"a setting's value", with("", "", "statement_timeout=soon"), "22023", "value"},
		// The test cluster has no TLS; pgconn's refusal carries no SQLSTATE.
		{"TLS required of a server without it", with("", "", "sslmode=require"), "", "TLS"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, c.url)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded")
			}
			if !errors.Is(err, storage.ErrInvalid) || !errors.Is(err, ErrRefused) || errors.Is(err, storage.ErrUnavailable) {
				t.Errorf("Open: %v\nwant ErrInvalid and ErrRefused (a configuration the database refuses), not ErrUnavailable", err)
			}
			if !strings.Contains(err.Error(), c.code) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Open: %v\nwant the SQLSTATE %s and a hint saying %q", err, c.code, c.says)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("Open's error quotes the password: %v", err)
			}
		})
	}
}

// TestAnUnparsableURLIsNoRefusal: serve gives a database's refusal (ErrRefused) a while to
// be mended, a role or database created a moment later; a URL that cannot be parsed never
// will be, and must not read as one.
func TestAnUnparsableURLIsNoRefusal(t *testing.T) {
	_, err := Open(t.Context(), "postgres://hv@db:notaport/hv")
	if !errors.Is(err, storage.ErrInvalid) || errors.Is(err, ErrRefused) {
		t.Errorf("Open: %v, want ErrInvalid and not ErrRefused", err)
	}
}

func mustParseQuery(t *testing.T, query string) neturl.Values {
	t.Helper()
	v, err := neturl.ParseQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConfigurationProblemsAreTheDatabasesRefusals: the SQLSTATEs that name a configuration
// (a wrong password, a role pg_hba.conf does not let in) are refused at once; those of a
// database on its way up or down (starting up, shutting down, too many connections) are not,
// so that serve waits for it. (The test cluster trusts every password: 28P01 is checked here.)
func TestConfigurationProblemsAreTheDatabasesRefusals(t *testing.T) {
	for code, refused := range map[string]bool{
		"28P01": true, "28000": true, "3D000": true, "42501": true, "3F000": true,
		"57P03": false, "57P01": false, "53300": false, "08006": false, "40001": false,
		// A setting's refusals count only from a connection attempt (see the test above).
		"42704": false, "22023": false,
	} {
		err := fmt.Errorf("crdb: detect engine: %w: %w", storage.ErrUnavailable, &pgconn.PgError{Severity: "FATAL", Code: code, Message: "m"})
		got := refuseConfiguration(err)
		if errors.Is(got, storage.ErrInvalid) != refused {
			t.Errorf("SQLSTATE %s: %v, want refused (ErrInvalid) %v", code, got, refused)
		}
		if !refused && got != err {
			t.Errorf("SQLSTATE %s: the error changed to %v", code, got)
		}
	}
}

// TestPoolSettingsOfTheURLWin: pgxpool reads pool_max_conn_lifetime, pool_max_conn_idle_time,
// pool_health_check_period and pool_ping_timeout from the URL, and hookverify's own defaults
// used to overwrite them in silence: an operator behind a proxy or load balancer that cuts
// connections after a few minutes, or following CockroachDB's advice to recycle connections
// so that they spread over new nodes, set one and got an hour. The URL's value must win, as
// its pool_max_conns and connect_timeout do; the defaults hold without one.
func TestPoolSettingsOfTheURLWin(t *testing.T) {
	const base = "postgres://hv@db:5432/hv"
	config, err := newPoolConfig(base + "?pool_max_conn_lifetime=4m&pool_max_conn_idle_time=30s&pool_health_check_period=3s&pool_ping_timeout=700ms")
	if err != nil {
		t.Fatal(err)
	}
	if config.MaxConnLifetime != 4*time.Minute || config.MaxConnIdleTime != 30*time.Second ||
		config.HealthCheckPeriod != 3*time.Second || config.PingTimeout != 700*time.Millisecond {
		t.Errorf("lifetime %v, idle time %v, health check period %v, ping timeout %v; want the URL's 4m, 30s, 3s, 700ms",
			config.MaxConnLifetime, config.MaxConnIdleTime, config.HealthCheckPeriod, config.PingTimeout)
	}
	config, err = newPoolConfig("host=db user=hv pool_max_conn_lifetime=4m")
	if err != nil {
		t.Fatal(err)
	}
	if config.MaxConnLifetime != 4*time.Minute {
		t.Errorf("key=value lifetime %v, want 4m", config.MaxConnLifetime)
	}
	// libpq's key=value form allows spaces around the "=" (and pgx reads it so); a URL may
	// percent-encode a parameter's name.
	config, err = newPoolConfig("host=db user=hv pool_max_conns = 3 pool_max_conn_lifetime =4m")
	if err != nil {
		t.Fatal(err)
	}
	if config.MaxConns != 3 || config.MaxConnLifetime != 4*time.Minute {
		t.Errorf("key = value: max conns %d, lifetime %v; want the string's 3 and 4m", config.MaxConns, config.MaxConnLifetime)
	}
	config, err = newPoolConfig(base + "?pool%5Fmax%5Fconns=3")
	if err != nil {
		t.Fatal(err)
	}
	if config.MaxConns != 3 {
		t.Errorf("percent-encoded name: max conns %d, want the URL's 3", config.MaxConns)
	}
	config, err = newPoolConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if config.MaxConnLifetime != maxConnLifetime || config.MaxConnIdleTime != maxConnIdleTime ||
		config.HealthCheckPeriod != healthCheckPeriod || config.PingTimeout != pingTimeout || config.MaxConns != defaultMaxConns {
		t.Errorf("without pool settings: %+v, want hookverify's defaults", config)
	}
}

// TestCommitsWaitForTheFlushOnPostgreSQL: an ACCEPTED answer promises the delivery is stored
// durably, and the provider, answered 2xx, never sends it again. On a PostgreSQL whose
// synchronous_commit is off (set for the cluster, the database or the role, for throughput's
// sake; the test cluster has it so), a commit returns before its WAL is flushed, and a crash
// then loses deliveries already answered ACCEPTED. The store's sessions must commit
// synchronously there, unless the URL itself asks otherwise.
func TestCommitsWaitForTheFlushOnPostgreSQL(t *testing.T) {
	url := pgtest.Shared(t).NewDatabase(t)
	if open(t, url).Engine() != EnginePostgreSQL {
		t.Skip("synchronous_commit is PostgreSQL's")
	}
	exec(t, connect(t, url), "ALTER DATABASE "+pgx.Identifier{strings.TrimPrefix(mustParseURL(t, url).Path, "/")}.Sanitize()+" SET synchronous_commit = off")
	for _, c := range []struct{ name, url, want string }{
		{"the database's off", url, "on"},
		{"the URL's own choice", withParam(t, url, "synchronous_commit", "off"), "off"},
		{"the URL's options", url + "&options=-c%20synchronous_commit%3Doff", "off"},
		// PostgreSQL reads a dash in an option's name as an underscore, and setting names in
		// any case: still the URL's own choice.
		{"the URL's options, dashed", url + "&options=-c%20synchronous-commit%3Doff", "off"},
		{"the URL's parameter, capitalised", withParam(t, url, "Synchronous_Commit", "off"), "off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := open(t, c.url)
			var setting string
			err := s.single(t.Context(), "show", func(ctx context.Context, conn *pgx.Conn) error {
				return conn.QueryRow(ctx, "SHOW synchronous_commit").Scan(&setting)
			})
			if err != nil {
				t.Fatal(err)
			}
			if setting != c.want {
				t.Errorf("the store's sessions commit with synchronous_commit = %s, want %s", setting, c.want)
			}
		})
	}
}

func mustParseURL(t *testing.T, s string) *neturl.URL {
	t.Helper()
	u, err := neturl.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// loginRole creates a role that may log in, named prefix and a unique suffix, with attrs
// (e.g. "CONNECTION LIMIT 0"), dropped when the test ends.
func loginRole(t *testing.T, admin *pgx.Conn, dbURL, prefix, attrs string) string {
	t.Helper()
	role := fmt.Sprintf("%s_%d", prefix, time.Now().UnixNano())
	exec(t, admin, "CREATE ROLE "+pgx.Identifier{role}.Sanitize()+" LOGIN "+attrs)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
			conn.Close(context.Background())
		}
	})
	return role
}
