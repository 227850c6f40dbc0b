package server_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// TestHealthListReportsTheServersStatus: grpc.health.v1.Health/List answers the status of
// service "" as Check does: SERVING with a store, NOT_SERVING once shutdown begins.
func TestHealthListReportsTheServersStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	list := func() healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		resp, err := e.health.List(t.Context(), &healthpb.HealthListRequest{})
		if err != nil {
			t.Fatalf("health List: %v", err)
		}
		got, ok := resp.GetStatuses()[""]
		if !ok {
			t.Fatalf("health List has no service \"\": %v", resp)
		}
		return got.GetStatus()
	}
	if got := list(); got != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health List with a store: %s, want SERVING", got)
	}
	e.srv.Shutdown()
	if got := list(); got != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("health List once shutdown began: %s, want NOT_SERVING", got)
	}
}

// watchToTheEnd reads a health watch until it ends and returns the statuses it was sent and
// the error it ended with. The minute is no deadline the server is meant to meet, only a bound
// on a watch that would never end.
func watchToTheEnd(t *testing.T, in *instance) ([]healthpb.HealthCheckResponse_ServingStatus, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	watch, err := in.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("health Watch: %v", err)
	}
	var got []healthpb.HealthCheckResponse_ServingStatus
	for {
		m, err := watch.Recv()
		if err != nil {
			return got, err
		}
		got = append(got, m.GetStatus())
	}
}

// TestHealthWatchEndsAtShutdownWithNotServingThenUnavailable: Shutdown ends every health
// watch (GracefulStop waits for each), having sent it NOT_SERVING, with UNAVAILABLE, the code
// a client takes for "try another server", not INTERNAL, a fault.
func TestHealthWatchEndsAtShutdownWithNotServingThenUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	type result struct {
		statuses []healthpb.HealthCheckResponse_ServingStatus
		err      error
	}
	done := make(chan result, 1)
	first := make(chan struct{})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	watch, err := e.health.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		var r result
		for {
			m, err := watch.Recv()
			if err != nil {
				r.err = err
				break
			}
			if len(r.statuses) == 0 {
				close(first)
			}
			r.statuses = append(r.statuses, m.GetStatus())
		}
		if len(r.statuses) == 0 {
			close(first)
		}
		done <- r
	}()
	<-first // the watch is under way
	e.srv.Shutdown()
	r := <-done
	if n := len(r.statuses); n < 2 || r.statuses[0] != healthpb.HealthCheckResponse_SERVING || r.statuses[n-1] != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("a watch across Shutdown was sent %v, want SERVING first and NOT_SERVING last", r.statuses)
	}
	if status.Code(r.err) != codes.Unavailable {
		t.Errorf("a watch across Shutdown ended with %v, want UNAVAILABLE", r.err)
	}
}

// TestHealthWatchStartedAfterShutdownIsSentNotServing: a client that starts watching during
// the drain (gRPC client-side health checking opens a watch on every new connection) is sent
// NOT_SERVING before its watch ends UNAVAILABLE, never an empty watch it cannot read a status
// from. The watch ends at once, and may end before gRPC's own watch has sent anything: the
// server sends the final status itself. Several watches, since whether gRPC's watch got to
// send first is a coin toss each time.
func TestHealthWatchStartedAfterShutdownIsSentNotServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, backends[0])
	e.srv.Shutdown()
	for i := range 24 {
		statuses, err := watchToTheEnd(t, e.instance)
		if n := len(statuses); n == 0 || statuses[n-1] != healthpb.HealthCheckResponse_NOT_SERVING {
			t.Errorf("watch %d, started after Shutdown, was sent %v, want NOT_SERVING last", i, statuses)
		}
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("watch %d, started after Shutdown, ended with %v, want UNAVAILABLE", i, err)
		}
	}
}
