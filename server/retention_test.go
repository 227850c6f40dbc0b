package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestRetentionLoopSurvivesAClockStepBack: the retention loop's hourly move of deliveries with
// no attempts left to the dead letters (see TestRunningServerDeadLettersSpentPendingHourly)
// goes on after the server's clock steps back, here by a day (an NTP step, a VM restored from a
// snapshot). Timed by the clock alone, the next move waited until the clock was an hour past
// the last move's time again: a day and an hour with the delivery pending and leased by nobody.
func TestRetentionLoopSurvivesAClockStepBack(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 5 })
		acceptSome(t, e, "work", 1)
		e.options = func(o *server.Options) { o.MaxAttempts = 2 }
		newServer := e.start(t, e.store)
		ctx, cancel := context.WithCancel(t.Context())
		loopDone := make(chan struct{})
		go func() {
			defer close(loopDone)
			newServer.srv.RunRetention(ctx, server.Retention{Interval: 10 * time.Millisecond})
		}()
		t.Cleanup(func() { cancel(); <-loopDone })
		time.Sleep(100 * time.Millisecond) // the loop has read the clock and runs
		for range 3 {
			d := lease(t, e, 1, time.Minute)
			if len(d) != 1 {
				t.Fatalf("old server leased %d, want 1", len(d))
			}
			if _, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d[0].GetInboxId(), LeaseToken: d[0].GetLeaseToken(), RetryAfter: durationpb.New(0), Error: "downstream down"}); err != nil {
				t.Fatalf("Nack: %v", err)
			}
		}
		e.instance = newServer
		e.clock.Advance(-24 * time.Hour)
		e.clock.Advance(time.Hour)
		deadline := time.Now().Add(5 * time.Second)
		for {
			dead, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{})
			if err != nil {
				t.Fatalf("ListDeadLetters: %v", err)
			}
			if len(dead.GetDeliveries()) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("after the clock stepped back a day, the delivery with no attempts left was not dead-lettered an hour on")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}
