package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/ratelog"
	"github.com/hookverify/hookverify/storage"
)

// storageStatus maps a storage error to the gRPC status callers see. Storage failures become
// UNAVAILABLE so that edges tell providers to retry; unexpected errors are logged in full and
// answered generically, since driver messages may describe the schema.
func (s *Server) storageStatus(ctx context.Context, op string, err error) error {
	return storageStatus(ctx, &s.storageLogs, op, err)
}

// storageLogInterval bounds how often one operation's storage failures are logged. In an
// outage (a full disk, a database down) every call fails alike: a line for each, at the rate
// deliveries arrive, buried the rest of the log, and wrote to the disk that was full.
const storageLogInterval = 10 * time.Second

// storageLogs limits the storage failure lines of each operation and kind (its own limiter,
// so that a flood of failed verifications does not hide a lone failed requeue, nor an outage's
// WARNs, storage unavailable, an unexpected failure's ERROR of the same operation: a bug or a
// corrupt file that an operator alerting on ERROR must see, outage or not).
type storageLogs struct {
	log  *slog.Logger
	mu   sync.Mutex
	byOp map[storageLogKey]*ratelog.Limiter
}

// storageLogKey is what one limiter of storageLogs bounds: the lines of one message (msg)
// about one operation.
type storageLogKey struct{ op, msg string }

// allow reports whether a line msg about a failure of op is logged, and how many were not
// since the last that was.
func (l *storageLogs) allow(op, msg string) (bool, int) {
	k := storageLogKey{op, msg}
	l.mu.Lock()
	lim, ok := l.byOp[k]
	if !ok {
		if l.byOp == nil {
			l.byOp = map[storageLogKey]*ratelog.Limiter{}
		}
		lim = ratelog.ForLog(l.log, storageLogInterval, msg+" of "+op)
		l.byOp[k] = lim
	}
	l.mu.Unlock()
	return lim.Allow()
}

func storageStatus(ctx context.Context, logs *storageLogs, op string, err error) error {
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
		if ok, heldBack := logs.allow(op, "storage unavailable"); ok {
			logs.log.WarnContext(ctx, "storage unavailable", "op", op, "err", err, "not_logged_since_last", heldBack)
		}
		return status.Error(codes.Unavailable, op+": storage unavailable, retry later")
	default:
		if ok, heldBack := logs.allow(op, "storage failure"); ok {
			logs.log.ErrorContext(ctx, "storage failure", "op", op, "err", err, "not_logged_since_last", heldBack)
		}
		return status.Error(codes.Unavailable, op+": storage failure, retry later")
	}
}

func isNotFound(err error) bool { return errors.Is(err, storage.ErrNotFound) }
