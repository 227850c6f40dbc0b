package crdb

import (
	"context"
	"errors"
	neturl "net/url"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/storage"
)

// TestOpenWaitsForABusyServerWithoutTLSUnderSslmodePrefer: with sslmode=prefer (pgx's
// default) and a server without TLS, pgx first tries TLS ("server refused TLS connection"),
// then connects without it, and joins both attempts' errors into one. A server that refuses
// the second attempt for a while (53300 too many connections, 57P03 starting up) was then read
// as "sslmode requires TLS" by the words of the first attempt: a refused configuration, so
// serve gave up after a minute on a database it only had to wait for, and the hint told the
// operator to turn TLS on. Only an sslmode that requires TLS is refused so.
func TestOpenWaitsForABusyServerWithoutTLSUnderSslmodePrefer(t *testing.T) {
	cluster := pgtest.Shared(t)
	dbURL := cluster.NewDatabase(t)
	admin := connect(t, dbURL)
	role := loginRole(t, admin, dbURL, "hv_busy", "CONNECTION LIMIT 0")
	for _, sslmode := range []string{"disable", "prefer"} {
		t.Run(sslmode, func(t *testing.T) {
			u, err := neturl.Parse(dbURL)
			if err != nil {
				t.Fatal(err)
			}
			u.User = neturl.User(role)
			q := u.Query()
			q.Set("sslmode", sslmode)
			u.RawQuery = q.Encode()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := Open(ctx, u.String())
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded for a role allowed no connection")
			}
			if errors.Is(err, ErrRefused) || errors.Is(err, storage.ErrInvalid) {
				t.Errorf("Open: %v\nwant a database to wait for (53300), not a refused configuration", err)
			}
		})
	}
}
