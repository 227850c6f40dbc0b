package server

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage"
)

// scriptedSweeps is a store whose every Sweep sends its request to the test and answers what
// the test replies.
type scriptedSweeps struct {
	storage.Store
	calls chan sweepCall
}

type sweepCall struct {
	req   storage.SweepRequest
	reply chan error
}

func (r *scriptedSweeps) Sweep(ctx context.Context, req storage.SweepRequest) (storage.SweepResult, error) {
	call := sweepCall{req, make(chan error, 1)}
	select {
	case r.calls <- call:
	case <-ctx.Done():
		return storage.SweepResult{}, ctx.Err()
	}
	return storage.SweepResult{}, <-call.reply
}

func (r *scriptedSweeps) DeadLetterExhausted(context.Context, storage.ExhaustedRequest) (int64, error) {
	return 0, nil
}

// TestRetentionReadsKeptClaimsOnlyNowAndThen: a claim past the dedupe window whose delivery is
// not acked (a dead letter) is kept, and every sweep read it again, under SQLite's one write
// lock: 200,000 dead letters past the window held it 3–5 s a minute. A sweep now starts from
// where the last complete one ended, and reaches back to the oldest claims once an hour (and
// at once when the clock steps back); a failed sweep is retried from where it began.
func TestRetentionReadsKeptClaimsOnlyNowAndThen(t *testing.T) {
	var clock atomic.Int64
	t0 := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	clock.Store(t0.UnixNano())
	srv, err := New(Options{Keyring: testpki.Keyring(t), Protocols: protocol.Default(), Metrics: NewMetrics(),
		Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	st := &scriptedSweeps{calls: make(chan sweepCall)}
	srv.SetStore(st)
	const window = 24 * time.Hour
	ctx, cancel := context.WithCancel(t.Context())
	var loop sync.WaitGroup
	loop.Go(func() { srv.RunRetention(ctx, Retention{DedupeWindow: window, Interval: time.Millisecond}) })
	t.Cleanup(func() { cancel(); loop.Wait() })

	// sweepAt moves the clock to at and returns the first sweep that starts after that, which
	// it answers with outcome. A sweep still under way from before the move is given the
	// outcome of the last one, as the store would have given it.
	var last storage.SweepRequest
	var lastOutcome error
	sweepAt := func(at time.Time, outcome error) storage.SweepRequest {
		t.Helper()
		clock.Store(at.UnixNano())
		for {
			select {
			case call := <-st.calls:
				if !call.req.ClaimsBefore.Equal(at.Add(-window)) {
					call.reply <- lastOutcome
					continue
				}
				call.reply <- outcome
				last, lastOutcome = call.req, outcome
				return call.req
			case <-time.After(10 * time.Second):
				t.Fatalf("no sweep at %v", at)
			}
		}
	}
	wantFrom := func(req storage.SweepRequest, from time.Time, what string) {
		t.Helper()
		if !req.ClaimsFrom.Equal(from) {
			t.Fatalf("%s: ClaimsFrom %v, want %v", what, req.ClaimsFrom, from)
		}
	}

	wantFrom(sweepAt(t0, nil), time.Time{}, "first sweep")
	wantFrom(sweepAt(t0.Add(time.Minute), nil), t0.Add(-window), "next minute's sweep")
	prev := last.ClaimsBefore
	wantFrom(sweepAt(t0.Add(59*time.Minute), nil), prev, "sweep an hour less a minute after the full one")
	wantFrom(sweepAt(t0.Add(time.Hour), nil), time.Time{}, "sweep an hour after the full one")

	failed := sweepAt(t0.Add(61*time.Minute), errors.New("connection reset"))
	wantFrom(failed, t0.Add(time.Hour-window), "failing sweep")
	wantFrom(sweepAt(t0.Add(62*time.Minute), nil), failed.ClaimsFrom, "sweep after a failed one")

	wantFrom(sweepAt(t0.Add(30*time.Minute), nil), time.Time{}, "sweep after the clock stepped back")
}
