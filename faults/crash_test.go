package faults

import (
	"context"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/crdb"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestCrashSQLite kills the server with SIGKILL during load, on the embedded store, restarts it
// on the same data directory, and checks that no accepted event was lost or doubled.
func TestCrashSQLite(t *testing.T) {
	t.Parallel()
	args, dbPath := sqliteArgs(t)
	crashUnderLoad(t, args, func(ctx context.Context) (storage.Store, error) { return sqlite.Open(ctx, dbPath) })
}

// TestCrashPostgres is TestCrashSQLite on PostgreSQL (the CockroachDB backend).
func TestCrashPostgres(t *testing.T) {
	t.Parallel()
	url := pgtest.Shared(t).NewDatabase(t)
	crashUnderLoad(t, postgresArgs(url, masterKeyFile(t)), func(ctx context.Context) (storage.Store, error) { return crdb.Open(ctx, url) })
}

// crashUnderLoad drives new events and redeliveries from several goroutines, kills the server
// with SIGKILL mid-load three times (restarting it each time on the same store while the load
// goes on), then redelivers every event, leases every delivery as a worker would, kills the
// server once more and reads the store directly.
func crashUnderLoad(t *testing.T, storeArgs []string, open func(context.Context) (storage.Store, error)) {
	const crashes = 3
	p := startProcess(t, "server", storeArgs...)
	admin := p.dial()
	defer admin.Close()
	e := createEndpoint(t, admin, "crash", "github")

	// One connection throughout: gRPC reconnects it to each restarted process.
	conn := p.dial()
	defer conn.Close()

	l := newLedger(e.id)
	ctx, stop := context.WithCancel(context.Background())
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		l.load(ctx, conn, e, 8, 70)
	}()
	for i := range crashes {
		before := l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED)
		waitFor(t, "load accepts events", func() bool { return l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED) >= before+200 })
		errorsBefore := l.errored.Load()
		p.kill()
		waitFor(t, "calls fail while the server is down", func() bool { return l.errored.Load() > errorsBefore+20 })
		p.start()
		t.Logf("crash %d: %d calls so far, %d accepted, %d errors", i+1, l.calls.Load(), l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED), l.errored.Load())
	}
	before := l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED)
	waitFor(t, "load accepts events after the last restart", func() bool { return l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED) >= before+200 })
	stop()
	<-loadDone

	l.redeliverAll(t, conn, e)
	inbox := l.check(t)
	t.Logf("%d events, %d calls, %d accepted, %d duplicates, %d errors", len(inbox), l.calls.Load(),
		l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED), l.count(hookverifyv1.Verdict_VERDICT_DUPLICATE), l.errored.Load())
	leaseAll(t, conn, e.id, inbox)

	p.kill()
	st, err := open(context.Background())
	if err != nil {
		t.Fatalf("open the store after the last crash: %v", err)
	}
	defer st.Close()
	checkStore(t, st, e.id, inbox)
}

// waitFor polls cond until it holds, failing the test after 60 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
