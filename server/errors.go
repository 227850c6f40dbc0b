package server

import (
	"context"
	"errors"
	"log/slog"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/storage"
)

// storageStatus maps a storage error to the gRPC status callers see. Storage failures become
// UNAVAILABLE so that edges tell providers to retry; unexpected errors are logged in full and
// answered generically, since driver messages may describe the schema.
func storageStatus(ctx context.Context, log *slog.Logger, op string, err error) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return status.Error(codes.NotFound, op+": not found")
	case errors.Is(err, storage.ErrAlreadyExists):
		return status.Error(codes.AlreadyExists, op+": already exists")
	case errors.Is(err, storage.ErrInvalid):
		return status.Error(codes.InvalidArgument, op+": invalid argument")
	// Only the caller's own context ending is the caller's deadline or cancellation. A store
	// error that wraps a context error of its own (a connection attempt timing out while the
	// database does not answer) is the store being unavailable: UNAVAILABLE, which clients
	// retry, not DEADLINE_EXCEEDED, which they do not.
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return status.Error(codes.DeadlineExceeded, op+": deadline exceeded")
		}
		return status.Error(codes.Canceled, op+": canceled")
	case errors.Is(err, storage.ErrUnavailable), errors.Is(err, storage.ErrClosed):
		log.WarnContext(ctx, "storage unavailable", "op", op, "err", err)
		return status.Error(codes.Unavailable, op+": storage unavailable, retry later")
	default:
		log.ErrorContext(ctx, "storage failure", "op", op, "err", err)
		return status.Error(codes.Unavailable, op+": storage failure, retry later")
	}
}

func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
