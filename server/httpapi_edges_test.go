package server

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"

	"github.com/hookverify/hookverify/internal/testpki"
	"github.com/hookverify/hookverify/server/protocol"
)

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

// TestHealthzAnswersGETOnly: /healthz is a probe, read with GET (and HEAD, which net/http's
// mux takes for GET); any other method is answered 405, as /readyz's and /metrics' are.
func TestHealthzAnswersGETOnly(t *testing.T) {
	s, err := New(Options{Keyring: testpki.Keyring(t), Protocols: protocol.Default()})
	if err != nil {
		t.Fatal(err)
	}
	h := s.HTTPHandler()
	for method, want := range map[string]int{
		http.MethodGet: http.StatusOK, http.MethodHead: http.StatusOK,
		http.MethodPost: http.StatusMethodNotAllowed, http.MethodPut: http.StatusMethodNotAllowed, http.MethodDelete: http.StatusMethodNotAllowed,
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/healthz", nil))
		if w.Code != want {
			t.Errorf("%s /healthz = %d, want %d", method, w.Code, want)
		}
	}
}

// TestRequestIDKeepsTheFirstOfSeveralCallerIDs: a call carrying x-request-id more than once
// (a proxy that appends its own) keeps the first, the one the edge that made the call logged.
func TestRequestIDKeepsTheFirstOfSeveralCallerIDs(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want string
	}{
		{[]string{"edge-1", "proxy-2"}, "edge-1"},
		{[]string{"edge-1", "not sane"}, "edge-1"},
	} {
		md := metadata.MD{}
		md.Append("x-request-id", tc.ids...)
		ctx := withRequestID(metadata.NewIncomingContext(context.Background(), md))
		if got := RequestID(ctx); got != tc.want {
			t.Errorf("x-request-id %q: request id %q, want %q", tc.ids, got, tc.want)
		}
	}
}
