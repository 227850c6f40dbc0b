package crdb

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzDatabaseURL: the --database-url an operator gives holds the database password, and a
// URL that does not parse is reported by urlProblem, whose words reach the log and the
// terminal. Properties, on any connection string with a password spliced in anywhere:
//   - newPoolConfig answers a configuration or an error, never a panic;
//   - when it fails, urlProblem says something without quoting any part of the string (checked
//     with a password of its own: it must not come back).
func FuzzDatabaseURL(f *testing.F) {
	for _, s := range []string{
		"postgres://hv:@db:5432/hv?sslmode=disable", "postgres://hv:pa#ss@db:5432/hv", "postgres://hv:p@ss@db/hv",
		"postgresql://hv:@[::1]:99999/hv", "host=db password= sslmode=nope", "cockroachdb://hv:@db:26257/hv",
		"postgres://hv:@db:5432/hv?connect_timeout=%zz", "postgres://hv:@db:5432/hv?pool_max_conns=x", "postgres",
	} {
		f.Add(s, uint16(len("postgres://hv:")))
	}
	const password = "Pw9zQmarkerXv"
	f.Fuzz(func(t *testing.T, s string, pos uint16) {
		i := int(pos) % (len(s) + 1)
		dsn := s[:i] + password + s[i:]
		// pgx reads the files and services a connection string names; a fuzzed one could name
		// a device or the fuzzer's own pipes. Those parameters are left out.
		lower := strings.ToLower(dsn)
		if u, err := url.QueryUnescape(lower); err == nil {
			lower += u
		}
		for _, risky := range []string{"ssl", "passfile", "service", "/dev", "/proc"} {
			if strings.Contains(lower, risky) {
				return
			}
		}
		if _, err := newPoolConfig(dsn); err == nil {
			return
		}
		if msg := urlProblem(dsn); strings.Contains(msg, password) {
			t.Fatalf("urlProblem(%q) quotes the string: %q", dsn, msg)
		}
	})
}
