package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/storage"
)

// TestStorageStatusContextErrors checks that a context error is the caller's deadline or
// cancellation only when the caller's own context has ended. A store error wrapping a context
// error of its own, as pgx's when a new connection to a silent database times out, is the
// store being unavailable, which clients retry.
func TestStorageStatusContextErrors(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	connectTimeout := fmt.Errorf("crdb: claim: %w: %w", storage.ErrUnavailable,
		fmt.Errorf("failed to connect: timeout: %w", context.DeadlineExceeded))
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancelExpired := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancelExpired()
	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want codes.Code
	}{
		{"store's own timeout, caller waiting", t.Context(), connectTimeout, codes.Unavailable},
		{"bare deadline error, caller waiting", t.Context(), context.DeadlineExceeded, codes.Unavailable},
		{"caller's deadline passed", expired, fmt.Errorf("%w: %w", storage.ErrUnavailable, context.DeadlineExceeded), codes.DeadlineExceeded},
		{"caller canceled", canceled, fmt.Errorf("query: %w", context.Canceled), codes.Canceled},
		{"caller canceled, store timed out", canceled, connectTimeout, codes.Canceled},
		{"not found, whatever the context", canceled, storage.ErrNotFound, codes.NotFound},
	} {
		if got := status.Code(storageStatus(c.ctx, log, "verify", c.err)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
