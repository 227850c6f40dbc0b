package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func TestRequestID(t *testing.T) {
	random := regexp.MustCompile(`^[0-9a-f]{16}$`)
	incoming := func(pairs ...string) context.Context {
		return metadata.NewIncomingContext(t.Context(), metadata.Pairs(pairs...))
	}
	if got := RequestID(t.Context()); got != "" {
		t.Fatalf("outside a call: %q, want empty", got)
	}
	ctx := withRequestID(incoming("x-request-id", "edge-42.a:b_c"))
	if got := RequestID(ctx); got != "edge-42.a:b_c" {
		t.Fatalf("caller's id not kept: %q", got)
	}
	// Up to 64 characters: a longer one is no id an edge makes, and bloats every log line.
	if id64 := strings.Repeat("a", 64); RequestID(withRequestID(incoming("x-request-id", id64))) != id64 {
		t.Fatal("a 64-character caller id was not kept")
	}
	for _, bad := range []string{"has space", "new\nline", string(make([]byte, 65)), strings.Repeat("a", 65)} {
		ctx := withRequestID(incoming("x-request-id", bad))
		first := RequestID(ctx)
		if !random.MatchString(first) {
			t.Fatalf("unsafe caller id %q: got %q, want a fresh random id", bad, first)
		}
		if again := RequestID(ctx); again != first {
			t.Fatalf("one call, two ids: %q then %q", first, again)
		}
	}
	a, b := RequestID(withRequestID(t.Context())), RequestID(withRequestID(t.Context()))
	if !random.MatchString(a) || a == b {
		t.Fatalf("calls without an id got %q and %q, want two different random ids", a, b)
	}
}

// TestRPCLogCarriesRequestID logs a failed call through logInterceptor and the handler the
// server's logger is built with, and finds the same request id on the interceptor's record
// and on one the handler wrote.
func TestRPCLogCarriesRequestID(t *testing.T) {
	var out bytes.Buffer
	s := &Server{log: slog.New(NewLogHandler(slog.NewJSONHandler(&out, nil)))}
	handler := func(ctx context.Context, _ any) (any, error) {
		s.log.InfoContext(ctx, "inside")
		return nil, status.Error(codes.InvalidArgument, "bad")
	}
	info := &grpc.UnaryServerInfo{FullMethod: "/test/Method"}
	for _, caller := range []string{"edge-7", ""} {
		out.Reset()
		ctx := t.Context()
		if caller != "" {
			ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("x-request-id", caller))
		}
		if _, err := s.logInterceptor(ctx, nil, info, handler); status.Code(err) != codes.InvalidArgument {
			t.Fatalf("interceptor changed the error: %v", err)
		}
		var ids []string
		for line := range bytes.Lines(out.Bytes()) {
			var rec map[string]any
			if err := json.Unmarshal(line, &rec); err != nil {
				t.Fatal(err)
			}
			id, _ := rec["request_id"].(string)
			ids = append(ids, id)
		}
		if len(ids) != 2 || ids[0] == "" || ids[0] != ids[1] || caller != "" && ids[0] != caller {
			t.Fatalf("caller id %q: records carry request ids %q, want two equal ones (the caller's if given)\n%s", caller, ids, out.String())
		}
	}
}
