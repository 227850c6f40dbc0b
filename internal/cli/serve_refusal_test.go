package cli

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/crdb"
)

// TestServeStopsOnADatabaseThatRefusesItsConfiguration: serve whose --database-url names a
// database that does not exist (or a role that does not, a wrong password) used to retry for
// ever, a WARN every 5 s, looking like a database still starting up. Once the refusal has
// lasted refusalGrace serve must stop, exit 1, with an error naming the cause and not the password.
func TestServeStopsOnADatabaseThatRefusesItsConfiguration(t *testing.T) {
	setMasterKeyEnv(t)
	// It stops once the refusal has lasted refusalGrace (TestServeWaitsForADatabaseCreatedAMomentLater).
	grace := refusalGrace
	refusalGrace = 2 * time.Second
	t.Cleanup(func() { refusalGrace = grace })
	u, err := neturl.Parse(pgtest.Shared(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	const password = "S3cretPassw0rd"
	u.User = neturl.UserPassword("postgres", password)
	u.Path = "/hv_no_such_database"
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out syncbuf.Buffer
	start := time.Now()
	err = runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
		"--listen", "127.0.0.1:0", "--database-url", u.String(),
	})
	if ctx.Err() != nil || err == nil {
		t.Fatalf("serve on a database that does not exist still running after %v (err %v); log:\n%s", time.Since(start).Round(time.Second), err, out.String())
	}
	if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "3D000") {
		t.Errorf("serve's error %q does not say the database does not exist", err)
	}
	if strings.Contains(err.Error()+out.String(), password) {
		t.Errorf("the password is in the error or the log: %v\n%s", err, out.String())
	}
}

// TestServeWaitsForADatabaseCreatedAMomentLater: a refusal by a database that answers is
// not always for good. The same deployment may create the database or the role a moment
// after serve starts (an init job beside it), and CockroachDB answers 28000 ("internal error
// while retrieving user account") when it cannot read its users, a cluster still coming up or
// momentarily without quorum. serve used to stop at the first refusal; it must keep trying
// for a while (refusalGrace), and come up once the database lets it in.
func TestServeWaitsForADatabaseCreatedAMomentLater(t *testing.T) {
	setMasterKeyEnv(t)
	cluster := pgtest.Shared(t)
	dbURL := cluster.NewDatabase(t)
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := pgx.Connect(t.Context(), cluster.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	rename := func(from, to string) error {
		_, err := admin.Exec(context.Background(), "ALTER DATABASE "+pgx.Identifier{from}.Sanitize()+" RENAME TO "+pgx.Identifier{to}.Sanitize())
		return err
	}
	away := name + "_later"
	if err := rename(name, away); err != nil {
		t.Fatal(err)
	}
	created := false
	defer func() {
		if !created {
			_ = rename(away, name) // for pgtest's cleanup to drop it
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{"--listen", "127.0.0.1:0", "--database-url", dbURL})
	}()
	select {
	case err := <-done:
		t.Fatalf("serve stopped at the first refusal of a database created a moment later: %v\n%s", err, out.String())
	case <-time.After(2 * time.Second):
	}
	if err := rename(away, name); err != nil {
		t.Fatal(err)
	}
	created = true
	deadline := time.After(20 * time.Second)
	for !strings.Contains(out.String(), "storage ready") {
		select {
		case err := <-done:
			t.Fatalf("serve stopped before the database it waited for came: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("serve not ready 20 s after its database was created; log:\n%s", out.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}

// TestServeStopsOnAPrivilegeMissingForItsStartUpWrites: a role that may read hookverify's
// tables but not write them (grants not brought up to date) passes Open, then fails serve's
// first writes (moving spent deliveries to the dead letters) with 42501; serve retried that
// for ever as "storage not ready", as if the database were still starting. It is the same
// configuration problem as at Open, and must end the same way: exit, naming the privilege.
func TestServeStopsOnAPrivilegeMissingForItsStartUpWrites(t *testing.T) {
	setMasterKeyEnv(t)
	grace := refusalGrace
	refusalGrace = 2 * time.Second
	t.Cleanup(func() { refusalGrace = grace })
	dbURL := pgtest.Shared(t).NewDatabase(t)
	owner, err := crdb.Open(t.Context(), dbURL) // migrates, as its owner
	if err != nil {
		t.Fatal(err)
	}
	owner.Close()
	admin, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	role := fmt.Sprintf("hv_readonly_%d", time.Now().UnixNano())
	for _, stmt := range []string{
		"CREATE ROLE " + pgx.Identifier{role}.Sanitize() + " LOGIN",
		"GRANT SELECT ON ALL TABLES IN SCHEMA public TO " + pgx.Identifier{role}.Sanitize(),
	} {
		if _, err := admin.Exec(t.Context(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dbURL)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP OWNED BY "+pgx.Identifier{role}.Sanitize())
			_, _ = conn.Exec(context.Background(), "DROP ROLE IF EXISTS "+pgx.Identifier{role}.Sanitize())
			conn.Close(context.Background())
		}
	})
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.User(role)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out syncbuf.Buffer
	err = runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
		"--listen", "127.0.0.1:0", "--database-url", u.String(),
	})
	if ctx.Err() != nil || err == nil {
		t.Fatalf("serve with a role that cannot write still running after 15 s (err %v); log:\n%s", err, out.String())
	}
	if !errors.Is(err, storage.ErrInvalid) || !strings.Contains(err.Error(), "42501") || !strings.Contains(err.Error(), "privilege") {
		t.Errorf("serve's error %q does not say a privilege is missing", err)
	}
}
