package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
)

// TestRequestIDKeepsACallersIDOfUpTo64Characters: the caller's x-request-id is kept up to 64
// characters, and one of 65 is replaced by a random id (a longer one is no id an edge makes,
// and bloats every log line).
func TestRequestIDKeepsACallersIDOfUpTo64Characters(t *testing.T) {
	in := func(id string) context.Context {
		return withRequestID(metadata.NewIncomingContext(t.Context(), metadata.Pairs("x-request-id", id)))
	}
	id64 := strings.Repeat("a", 64)
	if got := RequestID(in(id64)); got != id64 {
		t.Errorf("a 64-character id became %q", got)
	}
	id65 := strings.Repeat("a", 65)
	if got := RequestID(in(id65)); got == id65 {
		t.Errorf("a 65-character id was kept")
	}
}

// TestLogHandlerDerivedLoggersCarryRequestID: a logger derived with With or WithGroup from
// the server's handler still adds the call's request_id to every record.
func TestLogHandlerDerivedLoggersCarryRequestID(t *testing.T) {
	ctx := withRequestID(metadata.NewIncomingContext(t.Context(), metadata.Pairs("x-request-id", "edge-9")))
	for name, derive := range map[string]func(*slog.Logger) *slog.Logger{
		"With":      func(l *slog.Logger) *slog.Logger { return l.With("component", "x") },
		"WithGroup": func(l *slog.Logger) *slog.Logger { return l.WithGroup("g") },
	} {
		var out bytes.Buffer
		log := derive(slog.New(NewLogHandler(slog.NewJSONHandler(&out, nil))))
		log.InfoContext(ctx, "inside")
		if !strings.Contains(out.String(), `"request_id":"edge-9"`) {
			t.Errorf("%s: the record lacks the request id: %s", name, out.String())
		}
	}
}
