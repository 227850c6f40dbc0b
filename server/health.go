package server

import (
	"context"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// healthService is gRPC's health server, registered for service "", whose Watch streams end
// at Shutdown once they have been sent NOT_SERVING. A watch lasts as long as its client
// watches (gRPC client-side health checking keeps one open on every connection), and
// GracefulStop waits for every stream: one watcher held each drain until its bound, and then
// every call still running was cut off.
type healthService struct{ s *Server }

func (h healthService) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return h.s.health.Check(ctx, req)
}

func (h healthService) List(ctx context.Context, req *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	return h.s.health.List(ctx, req)
}

func (h healthService) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	watched := make(chan error, 1)
	go func() { watched <- h.s.health.Watch(req, &watchStream{stream, ctx}) }()
	select {
	case err := <-watched:
		return err
	case <-h.s.stopping:
	}
	// The watch may not have sent NOT_SERVING yet: end it, then send the final status from
	// here (one sender at a time on a stream).
	cancel()
	<-watched
	if resp, err := h.s.health.Check(stream.Context(), req); err == nil {
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return status.Error(codes.Unavailable, "server is shutting down")
}

// watchStream is a Watch stream whose context ends when the server shuts down.
type watchStream struct {
	healthpb.Health_WatchServer
	ctx context.Context
}

func (w *watchStream) Context() context.Context { return w.ctx }

// shuttingDown reports whether Shutdown has been called.
func (s *Server) shuttingDown() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}
