package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/metadata"
)

// HTTPHandler serves the operational endpoints: /healthz (the process is up), /readyz (storage
// is open, migrated and answering, both a ping and the inbox monitor's reads, as gRPC health
// follows them, and shutdown has not begun) and, with metrics configured, /metrics for
// Prometheus.
func (s *Server) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		if s.shuttingDown() {
			// The store stays open while the calls under way drain, but new ones are refused:
			// not ready, as gRPC health says NOT_SERVING.
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		st, err := s.storage()
		if err != nil {
			http.Error(w, "storage not open yet", http.StatusServiceUnavailable)
			return
		}
		if !s.storageAnswersMonitor() {
			// The inbox monitor's last read failed, or has not answered for too long (a lock,
			// a statement the database refuses): gRPC health says NOT_SERVING, and so does
			// this, though a ping may still pass.
			http.Error(w, "storage does not answer the inbox monitor", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := st.Ping(ctx); err != nil {
			http.Error(w, "storage unreachable", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if s.metrics != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))
	}
	return mux
}

type requestIDKey struct{}

// requestIDPattern is what an incoming x-request-id may look like to be kept (else a new one
// is made): short and free of anything that could forge log structure.
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// withRequestID gives the call a request id: the caller's x-request-id metadata when sane,
// else a random one. Logs written with the context carry it (see NewLogHandler). The id is
// settled when first asked for: most calls log nothing, and then neither is the metadata read
// nor a random id drawn.
func withRequestID(ctx context.Context) context.Context {
	return context.WithValue(ctx, requestIDKey{}, &requestID{})
}

// requestID is a call's id, fixed by the first RequestID and the same for every later one.
type requestID struct {
	once sync.Once
	id   string
}

// RequestID returns the call's request id, or "" outside a call.
func RequestID(ctx context.Context) string {
	r, _ := ctx.Value(requestIDKey{}).(*requestID)
	if r == nil {
		return ""
	}
	r.once.Do(func() {
		if ids := metadata.ValueFromIncomingContext(ctx, "x-request-id"); len(ids) > 0 && requestIDPattern.MatchString(ids[0]) {
			r.id = ids[0]
			return
		}
		var b [8]byte
		rand.Read(b[:])
		r.id = hex.EncodeToString(b[:])
	})
	return r.id
}

// NewLogHandler wraps h so every record logged with a call's context carries its request_id.
func NewLogHandler(h slog.Handler) slog.Handler { return requestIDHandler{h} }

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
