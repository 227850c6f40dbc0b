package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
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
		if got := status.Code(storageStatus(c.ctx, &storageLogs{log: log}, "verify", c.err)); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestStorageFailuresLoggedOncePerInterval: in an outage every call fails alike, and each
// failure was a line, at the rate deliveries arrive (on a full disk, onto the disk that was
// full). Now each operation logs one line per interval, with the count held back since the
// last, and one operation's flood does not hide another's failure.
func TestStorageFailuresLoggedOncePerInterval(t *testing.T) {
	var buf bytes.Buffer
	logs := &storageLogs{log: slog.New(slog.NewTextHandler(&buf, nil))}
	full := fmt.Errorf("sqlite: claim: %w: database or disk is full (13)", storage.ErrUnavailable)
	for range 1000 {
		if got := status.Code(storageStatus(t.Context(), logs, "verify", full)); got != codes.Unavailable {
			t.Fatalf("storageStatus of a full disk: %v, want UNAVAILABLE", got)
		}
	}
	storageStatus(t.Context(), logs, "requeue", errors.New("driver: bad connection"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "op=verify") || !strings.Contains(lines[0], "disk is full") ||
		!strings.Contains(lines[1], "op=requeue") || !strings.Contains(lines[1], "level=ERROR") {
		t.Fatalf("logged %d lines for 1,000 failed verifications and a failed requeue:\n%s\nwant one of each", len(lines), buf.String())
	}
}

// TestUnexpectedStorageFailureNotHiddenByAnOutage: an operation's unexpected storage failure
// (the ERROR "storage failure": a bug, a schema the code does not expect, a corrupt file) is
// logged even while the same operation is failing as unavailable by the thousand. Sharing one
// limiter per operation, the outage's first WARN line of each interval held back every
// ERROR for as long as the outage lasted, and its count came out as a WARN of "storage
// failures".
func TestUnexpectedStorageFailureNotHiddenByAnOutage(t *testing.T) {
	var buf bytes.Buffer
	logs := &storageLogs{log: slog.New(slog.NewTextHandler(&buf, nil))}
	down := fmt.Errorf("crdb: claim: %w: connection refused", storage.ErrUnavailable)
	for range 1000 {
		_ = storageStatus(t.Context(), logs, "verify", down)
	}
	_ = storageStatus(t.Context(), logs, "verify", errors.New(`crdb: claim: ERROR: column "x" does not exist`))
	if !strings.Contains(buf.String(), "level=ERROR") || !strings.Contains(buf.String(), `column \"x\" does not exist`) {
		t.Fatalf("an unexpected failure of verify during an outage of verify was not logged:\n%s", buf.String())
	}
}
