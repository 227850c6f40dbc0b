package crdb

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/storage"
)

// TestOpenSaysWhatIsWrongWithTheURL: a --database-url that pgx cannot parse used to give
// only "cannot parse the database URL", since pgx's own message can quote the password. The
// operator then had nothing to go on; the commonest cause, a password with an unencoded "#"
// or "@", is one they cannot see. Open must name the likely problem and still quote nothing.
func TestOpenSaysWhatIsWrongWithTheURL(t *testing.T) {
	const password = "S3cret"
	for _, c := range []struct{ url, want string }{
		{"postgres://hv:" + password + "@db:5432/hv?sslmode=disable&connect_timeout=%zz", "percent-encode"},
		{"postgres://hv:" + password + "@db:99999/hv", "port is not a number"},
		{"postgres://hv:" + password + "@[db:5432/hv", "not a valid URL"},
		{"postgres://hv:" + password + "@db:54x2/hv", "port is not a number"},
		{"postgres://hv:" + password + "@db:5432/hv?sslmode=strict", "sslmode"},
		{"postgres://hv:" + password + "@db:5432/hv?connect_timeout=soon", "connect_timeout"},
		{"cockroachdb://hv:" + password + "@db:26257/hv", "scheme must be postgres://"},
		{"host=db password=" + password + " sslmode=nope", "key=value"},
	} {
		_, err := Open(context.Background(), c.url)
		if err == nil {
			t.Errorf("Open(%q) succeeded", c.url)
			continue
		}
		if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Open(%q): %v, want ErrInvalid saying %q", c.url, err, c.want)
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("Open(%q)'s error quotes the password: %v", c.url, err)
		}
	}
}
