package server_test

import (
	"sync"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// outcome is one concurrent Verify call's result.
type outcome struct {
	resp *hookverifyv1.VerifyResponse
	err  error
}

// race runs each call in its own goroutine, all released at once, and returns the
// outcomes in the order of calls.
func race(t *testing.T, calls []func() (*hookverifyv1.VerifyResponse, error)) []outcome {
	t.Helper()
	out := make([]outcome, len(calls))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, call := range calls {
		wg.Go(func() {
			<-start
			out[i].resp, out[i].err = call()
		})
	}
	close(start)
	wg.Wait()
	return out
}

// checkRace checks the outcomes of one event's racing deliveries: no errors, exactly one
// ACCEPTED, the rest DUPLICATE, all naming the same claim.
func checkRace(t *testing.T, outcomes []outcome) *hookverifyv1.VerifyResponse {
	t.Helper()
	var winner *hookverifyv1.VerifyResponse
	dups := 0
	for _, o := range outcomes {
		if o.err != nil {
			t.Fatalf("Verify: %v", o.err)
		}
		checkReply(t, o.resp)
		switch o.resp.GetVerdict() {
		case accepted:
			if winner != nil {
				t.Fatalf("two ACCEPTED for one event: inbox %s and %s", winner.GetInboxId(), o.resp.GetInboxId())
			}
			winner = o.resp
		case duplicate:
			dups++
		default:
			t.Fatalf("%s %s (%s)", o.resp.GetVerdict(), o.resp.GetRejectReason(), o.resp.GetDetail())
		}
	}
	if winner == nil || dups != len(outcomes)-1 {
		t.Fatalf("%d ACCEPTED and %d DUPLICATE of %d, want exactly one ACCEPTED", len(outcomes)-dups, dups, len(outcomes))
	}
	for _, o := range outcomes {
		sameClaim(t, o.resp, winner)
	}
	return winner
}

// TestVerifyConcurrent proves the claim is atomic: 50 simultaneous deliveries of one event
// give one ACCEPTED, 49 DUPLICATE and one inbox record; deliveries of one event to two
// endpoints sharing a dedupe scope race the same way; and two server instances, each with its
// own store handle on the same database, racing on the same events accept each once.
func TestVerifyConcurrent(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := stripeProvider
		secret, _ := e.setup(t, p, "shop")

		t.Run("50 goroutines, one server", func(t *testing.T) {
			req := e.deliver(t, p, "shop", eventID(p), secret)
			calls := make([]func() (*hookverifyv1.VerifyResponse, error), 50)
			for i := range calls {
				calls[i] = func() (*hookverifyv1.VerifyResponse, error) { return e.verifier.Verify(t.Context(), req) }
			}
			winner := checkRace(t, race(t, calls))
			if n := e.count(t); n != 1 {
				t.Fatalf("%d inbox records, want 1", n)
			}
			if _, err := e.store.GetDelivery(t.Context(), winner.GetInboxId()); err != nil {
				t.Fatalf("GetDelivery(winner): %v", err)
			}
		})

		t.Run("two endpoints sharing a dedupe scope", func(t *testing.T) {
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "eu", Provider: "stripe", DedupeScope: "acme"})
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "us", Provider: "stripe", DedupeScope: "acme"})
			eu, us := p.newSecret(), p.newSecret()
			e.addSecret(t, "eu", eu)
			e.addSecret(t, "us", us)
			id := eventID(p)
			toEU, toUS := e.deliver(t, p, "eu", id, eu), e.deliver(t, p, "us", id, us)
			var calls []func() (*hookverifyv1.VerifyResponse, error)
			for range 10 {
				calls = append(calls,
					func() (*hookverifyv1.VerifyResponse, error) { return e.verifier.Verify(t.Context(), toEU) },
					func() (*hookverifyv1.VerifyResponse, error) { return e.verifier.Verify(t.Context(), toUS) })
			}
			checkRace(t, race(t, calls))
			if n, err := e.store.CountDeliveries(t.Context(), "acme"); err != nil || n != 1 {
				t.Fatalf("CountDeliveries(acme) = %d, %v; want 1", n, err)
			}
		})

		t.Run("two servers on one database", func(t *testing.T) {
			other := e.start(t, openStore(t, b, e.dsn))
			before := e.count(t)
			// Every delivery of every event races at once, from both servers.
			const events, perServer = 8, 5
			var calls []func() (*hookverifyv1.VerifyResponse, error)
			for range events {
				req := e.deliver(t, p, "shop", eventID(p), secret)
				for _, in := range []*instance{e.instance, other} {
					for range perServer {
						calls = append(calls, func() (*hookverifyv1.VerifyResponse, error) { return in.verifier.Verify(t.Context(), req) })
					}
				}
			}
			outcomes := race(t, calls)
			keys := map[string]bool{}
			for i := range events {
				winner := checkRace(t, outcomes[i*2*perServer:(i+1)*2*perServer])
				keys[winner.GetOperationKey()] = true
			}
			if len(keys) != events {
				t.Fatalf("%d distinct operation keys for %d events", len(keys), events)
			}
			if n := e.count(t); n != before+events {
				t.Fatalf("%d new inbox records, want %d", n-before, events)
			}
		})
	})
}
