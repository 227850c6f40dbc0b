package faults

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/pgtest"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage/crdb"
)

// TestSeveralInstances runs three server processes on one PostgreSQL database and delivers
// every event to all three at the same moment: exactly one of them answers ACCEPTED, the others
// DUPLICATE with the same operation key and inbox record.
func TestSeveralInstances(t *testing.T) {
	t.Parallel()
	const instances, events, workers = 3, 300, 4
	url := pgtest.Shared(t).NewDatabase(t)
	keyFile := masterKeyFile(t)
	conns := make([]*client.Conn, instances)
	for i := range conns {
		p := startProcess(t, fmt.Sprintf("instance-%d", i+1), postgresArgs(url, keyFile)...)
		conns[i] = p.dial()
		defer conns[i].Close()
	}
	e := createEndpoint(t, conns[0], "instances", "github")

	l := newLedger(e.id)
	work := make(chan string)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				// Each instance gets the same delivery; the goroutines start together.
				start := make(chan struct{})
				var race sync.WaitGroup
				for _, conn := range conns {
					race.Add(1)
					go func() {
						defer race.Done()
						<-start
						l.verify(context.Background(), conn, e, id, false)
					}()
				}
				close(start)
				race.Wait()
			}
		}()
	}
	for range events {
		work <- l.newID("evt")
	}
	close(work)
	wg.Wait()

	if got := l.count(hookverifyv1.Verdict_VERDICT_ACCEPTED); got != events {
		t.Errorf("%d ACCEPTED answers for %d events delivered to %d instances at once", got, events, instances)
	}
	if got := l.count(hookverifyv1.Verdict_VERDICT_DUPLICATE); got != events*(instances-1) {
		t.Errorf("%d DUPLICATE answers, want %d", got, events*(instances-1))
	}
	for _, a := range l.answersBetween(timeZero, timeMax) {
		if a.code != codes.OK {
			t.Errorf("a call failed without any fault injected: %v", a.err)
		}
	}
	l.redeliverAll(t, conns[instances-1], e)
	inbox := l.check(t)
	st, err := crdb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkStore(t, st, e.id, inbox)
}
