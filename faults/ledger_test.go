package faults

import (
	"context"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// answer is what one Verify call got back.
type answer struct {
	event   string
	verdict hookverifyv1.Verdict
	opKey   string
	inboxID string
	code    codes.Code // OK when a verdict came back
	final   bool       // given by the redelivery pass after the faults
	err     error
	sent    time.Time
	got     time.Time
}

// ledger records every answer per event id, as a provider's view of what it was told.
type ledger struct {
	scope string // the endpoint's dedupe scope, for the expected operation keys

	mu      sync.Mutex
	events  map[string][]answer
	ids     []string // in order of first sending
	next    atomic.Int64
	calls   atomic.Int64
	errored atomic.Int64
}

func newLedger(scope string) *ledger {
	return &ledger{scope: scope, events: map[string][]answer{}}
}

// newID returns a fresh event id and notes it as sent.
func (l *ledger) newID(prefix string) string {
	id := fmt.Sprintf("%s-%06d", prefix, l.next.Add(1))
	l.mu.Lock()
	l.ids = append(l.ids, id)
	l.events[id] = nil
	l.mu.Unlock()
	return id
}

// sentIDs returns a copy of every event id sent so far.
func (l *ledger) sentIDs() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ids)
}

// randomSent picks an event sent before, or "" if none was.
func (l *ledger) randomSent(r *mrand.Rand) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == 0 {
		return ""
	}
	return l.ids[r.IntN(len(l.ids))]
}

// verify sends one delivery of the event and records the answer.
func (l *ledger) verify(ctx context.Context, conn *client.Conn, e endpoint, id string, final bool) answer {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req := e.delivery(nil, id)
	sent := time.Now()
	resp, err := conn.Verifier.Verify(ctx, req)
	a := answer{event: id, code: status.Code(err), final: final, err: err, sent: sent, got: time.Now()}
	if err == nil {
		a.verdict, a.opKey, a.inboxID = resp.GetVerdict(), resp.GetOperationKey(), resp.GetInboxId()
	} else {
		l.errored.Add(1)
	}
	l.calls.Add(1)
	l.mu.Lock()
	l.events[id] = append(l.events[id], a)
	l.mu.Unlock()
	return a
}

// acceptance returns the ACCEPTED answer the event got, if it got one.
func (l *ledger) acceptance(id string) (answer, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range l.events[id] {
		if a.verdict == hookverifyv1.Verdict_VERDICT_ACCEPTED {
			return a, true
		}
	}
	return answer{}, false
}

// answersBetween returns the answers to calls sent at or after from and answered before to.
func (l *ledger) answersBetween(from, to time.Time) []answer {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []answer
	for _, answers := range l.events {
		for _, a := range answers {
			if !a.sent.Before(from) && a.got.Before(to) {
				out = append(out, a)
			}
		}
	}
	return out
}

// count returns how many answers had the verdict (errors: VERDICT_UNSPECIFIED).
func (l *ledger) count(v hookverifyv1.Verdict) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, answers := range l.events {
		for _, a := range answers {
			if a.verdict == v {
				n++
			}
		}
	}
	return n
}

// load drives conn with workers goroutines until ctx ends: a share newPercent of the calls
// deliver a new event, the rest redeliver one sent before. An error is followed by a short
// pause, as a provider's retry would be.
func (l *ledger) load(ctx context.Context, conn *client.Conn, e endpoint, workers, newPercent int) {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := mrand.New(mrand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				id := nextEvent(r, newPercent, l.randomSent, func() string { return l.newID("evt") })
				if a := l.verify(ctx, conn, e, id, false); a.code != codes.OK {
					select {
					case <-ctx.Done():
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}()
	}
	wg.Wait()
}

// nextEvent picks the event a provider sends next: a new one (fresh) in newPercent of the picks,
// else one sent before (sent), or a new one if none was.
func nextEvent(r *mrand.Rand, newPercent int, sent func(*mrand.Rand) string, fresh func() string) string {
	if r.IntN(100) >= newPercent {
		if id := sent(r); id != "" {
			return id
		}
	}
	return fresh()
}

// redeliverAll sends every event once more, retrying errors (the server is expected up), so
// that every event id ever sent ends up with a verdict.
func (l *ledger) redeliverAll(t *testing.T, conn *client.Conn, e endpoint) {
	t.Helper()
	ids := l.sentIDs()
	work := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				for attempt := 1; ; attempt++ {
					a := l.verify(context.Background(), conn, e, id, true)
					if a.code == codes.OK {
						break
					}
					if attempt == 5 {
						t.Errorf("redelivery of %s: still failing after %d attempts: %v", id, attempt, a.code)
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// check verifies the ledger after redeliverAll: per event id at most one ACCEPTED across every
// fault; every ACCEPTED and DUPLICATE with the event's operation key and the same inbox record;
// the redelivery after the faults DUPLICATE whenever an earlier call was ACCEPTED; never a
// rejection. It returns the inbox id of each event.
func (l *ledger) check(t *testing.T) map[string]string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	inbox := make(map[string]string, len(l.events))
	unanswered := 0 // events stored by a call whose answer was lost (no ACCEPTED ever)
	failures := &failureLog{t: t}
	fail := failures.fail
	for id, answers := range l.events {
		want := server.OperationKey(l.scope, id)
		accepted, acceptedBeforeFinal, finals := 0, 0, 0
		for _, a := range answers {
			if a.code != codes.OK {
				continue
			}
			if checkAnswer(failures, inbox, id, want, a.verdict, a.opKey, a.inboxID) {
				accepted++
				if !a.final {
					acceptedBeforeFinal++
				}
			}
		}
		if accepted > 1 {
			fail("%s: ACCEPTED %d times", id, accepted)
		}
		if accepted == 0 {
			unanswered++
		}
		for _, a := range answers {
			if !a.final || a.code != codes.OK {
				continue
			}
			finals++
			if acceptedBeforeFinal > 0 && a.verdict != hookverifyv1.Verdict_VERDICT_DUPLICATE {
				fail("%s: redelivery after the faults answered %v, want DUPLICATE", id, a.verdict)
			}
		}
		if finals == 0 {
			fail("%s: the redelivery after the faults got no verdict", id)
		}
	}
	failures.done()
	t.Logf("%d events; %d of them committed by a call whose answer was an error (never ACCEPTED, DUPLICATE on redelivery)", len(l.events), unanswered)
	return inbox
}

// failureLog reports the first 20 failures of a check, then (done) how many more there were:
// a fault that breaks every event would otherwise bury the first lines.
type failureLog struct {
	t *testing.T
	n int
}

func (f *failureLog) fail(format string, args ...any) {
	f.t.Helper()
	if f.n++; f.n <= 20 {
		f.t.Errorf(format, args...)
	}
}

func (f *failureLog) done() {
	if f.n > 20 {
		f.t.Errorf("... and %d more failures", f.n-20)
	}
}

// checkAnswer checks one successful answer for event id: ACCEPTED or DUPLICATE, with the
// event's operation key, and naming the same inbox record as the event's other answers (kept
// in inbox). It reports whether the answer was ACCEPTED.
func checkAnswer(f *failureLog, inbox map[string]string, id, wantKey string, verdict hookverifyv1.Verdict, opKey, inboxID string) (accepted bool) {
	f.t.Helper()
	switch verdict {
	case hookverifyv1.Verdict_VERDICT_ACCEPTED, hookverifyv1.Verdict_VERDICT_DUPLICATE:
	default:
		f.fail("%s: answered %v", id, verdict)
		return false
	}
	if opKey != wantKey {
		f.fail("%s: %v with operation key %q, want %q", id, verdict, opKey, wantKey)
	}
	if prev, ok := inbox[id]; ok && prev != inboxID {
		f.fail("%s: answers name two inbox records, %s and %s", id, prev, inboxID)
	}
	inbox[id] = inboxID
	return verdict == hookverifyv1.Verdict_VERDICT_ACCEPTED
}

// checkStore reads the store directly: the scope holds exactly one inbox record per event id
// sent, the one the answers named, with the event's operation key.
func checkStore(t *testing.T, st storage.Store, scope string, inbox map[string]string) {
	t.Helper()
	ctx := context.Background()
	n, err := st.CountDeliveries(ctx, scope)
	if err != nil {
		t.Fatalf("count deliveries: %v", err)
	}
	if n != int64(len(inbox)) {
		t.Errorf("inbox holds %d records for %d events", n, len(inbox))
	}
	failures := &failureLog{t: t}
	for id, inboxID := range inbox {
		claim, err := st.LookupClaim(ctx, scope, id)
		if err == nil && claim.InboxID != inboxID {
			err = fmt.Errorf("claim names inbox record %s, the answers named %s", claim.InboxID, inboxID)
		}
		if err == nil {
			var d storage.Delivery
			d, err = st.GetDelivery(ctx, inboxID)
			if err == nil && (d.EventID != id || d.Scope != scope || d.OperationKey != server.OperationKey(scope, id)) {
				err = fmt.Errorf("inbox record %s is event %q of scope %q with key %q", inboxID, d.EventID, d.Scope, d.OperationKey)
			}
		}
		if err != nil {
			failures.fail("%s: %v", id, err)
		}
	}
	failures.done()
}

// leaseAll leases every pending delivery of the endpoint as a worker would and checks that each
// event arrives exactly once, with the operation key it was answered with.
func leaseAll(t *testing.T, conn *client.Conn, endpointID string, inbox map[string]string) {
	t.Helper()
	inboxClient := hookverifyv1.NewInboxServiceClient(conn.GRPC())
	seen := map[string]int{}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := inboxClient.Lease(ctx, &hookverifyv1.LeaseRequest{
			EndpointIds: []string{endpointID}, MaxDeliveries: 100, VisibilityTimeout: durationpb.New(10 * time.Minute),
		})
		cancel()
		if err != nil {
			t.Fatalf("lease: %v", err)
		}
		if len(resp.GetDeliveries()) == 0 {
			break
		}
		for _, d := range resp.GetDeliveries() {
			seen[d.GetEventId()]++
			if want, ok := inbox[d.GetEventId()]; !ok || want != d.GetInboxId() {
				t.Errorf("leased inbox record %s of event %s, which the answers did not name", d.GetInboxId(), d.GetEventId())
			}
			if d.GetOperationKey() != server.OperationKey(d.GetDedupeScope(), d.GetEventId()) {
				t.Errorf("leased %s with operation key %s", d.GetEventId(), d.GetOperationKey())
			}
		}
	}
	for id := range inbox {
		if seen[id] != 1 {
			t.Errorf("event %s leased %d times, want once", id, seen[id])
		}
	}
}

// The widest range of answersBetween.
var (
	timeZero = time.Time{}
	timeMax  = time.Unix(1<<62, 0)
)
