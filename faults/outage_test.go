package faults

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/hookverify/hookverify/internal/pgtest"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage/crdb"
)

// TestPostgresOutage stops PostgreSQL during load. While it is down every call is answered
// UNAVAILABLE, never ACCEPTED. (One exception, before the server has seen the outage: a
// redelivery of an event it accepted earlier may be answered from its claim cache, DUPLICATE
// of that very claim; once any call has failed, and so for any call sent after the first
// UNAVAILABLE answer arrived, only UNAVAILABLE.) Once it is back the same server process accepts again without a
// restart, and nothing accepted before the outage is lost.
func TestPostgresOutage(t *testing.T) {
	t.Parallel()
	cluster := pgtest.Start(t)
	url := cluster.NewDatabase(t)
	p := startProcess(t, "server", postgresArgs(url, masterKeyFile(t))...)
	pid := p.pid()
	conn := p.dial()
	defer conn.Close()
	e := createEndpoint(t, conn, "outage", "github")

	l := newLedger(e.id)
	ctx, stop := context.WithCancel(context.Background())
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		l.load(ctx, conn, e, 6, 70)
	}()
	defer func() { stop(); <-loadDone }()
	waitFor(t, "load accepts events", func() bool { return l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED) >= 200 })
	sentBefore := l.sentIDs()

	cluster.Stop(t)
	down := time.Now()
	errorsBefore := l.errored.Load()
	waitFor(t, "calls fail during the outage", func() bool { return l.errored.Load() > errorsBefore+50 })
	time.Sleep(time.Second)
	up := time.Now()
	cluster.Start(t)

	during := l.answersBetween(down, up)
	if len(during) < 50 {
		t.Errorf("only %d calls were answered during the outage", len(during))
	}
	firstFailure := up
	for _, a := range during {
		if a.code == codes.Unavailable && a.got.Before(firstFailure) {
			firstFailure = a.got
		}
	}
	remembered := 0
	for _, a := range during {
		if first, ok := l.acceptance(a.event); ok && a.code == codes.OK && a.verdict == hookverifyv1.Verdict_VERDICT_DUPLICATE &&
			a.sent.Before(firstFailure) && first.got.Before(down) && a.opKey == first.opKey && a.inboxID == first.inboxID {
			remembered++
			continue
		}
		if a.code != codes.Unavailable {
			t.Errorf("during the outage: verdict %v, code %v (%v), want UNAVAILABLE", a.verdict, a.code, a.err)
		}
	}

	accepted := l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED)
	waitFor(t, "the server accepts again after the outage", func() bool { return l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED) >= accepted+100 })
	t.Logf("outage %v, %d calls answered during it: %d UNAVAILABLE, %d DUPLICATE from the claim cache before the first failure; accepting again %v after PostgreSQL came back",
		up.Sub(down).Round(time.Millisecond), len(during), len(during)-remembered, remembered, time.Since(up).Round(time.Millisecond))
	if !p.alive() || p.pid() != pid {
		t.Fatal("the server process did not survive the outage")
	}
	stop()
	<-loadDone

	l.redeliverAll(t, conn, e)
	inbox := l.check(t)
	for _, id := range sentBefore {
		if _, ok := inbox[id]; !ok {
			t.Errorf("event %s sent before the outage has no inbox record", id)
		}
	}
	st, err := crdb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkStore(t, st, e.id, inbox)
}
