package client

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/internal/ascii"
	"github.com/hookverify/hookverify/internal/budget"
	"github.com/hookverify/hookverify/internal/hopbyhop"
	"github.com/hookverify/hookverify/internal/ident"
	"github.com/hookverify/hookverify/internal/ratelog"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// retryHint is how long the provider should wait: the server's RetryInfo hint when it sent one
// (backpressure does), within [1 s, MaxRetryAfter], else the handler's Retry-After.
func (h *handler) retryHint(err error) time.Duration {
	if hint, ok := retryHint(err); ok {
		return min(max(hint, time.Second), MaxRetryAfter)
	}
	return h.retryAfter
}

// setRetryAfter writes d as Retry-After, rounded up to whole seconds and at least 1: its
// delay-seconds are digits only (RFC 9110), so a configured zero or negative delay would come
// out as "0" (retry at once, against a server that is down) or as "-5", which providers cannot
// parse.
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	w.Header().Set("Retry-After", strconv.Itoa(int(max(math.Ceil(d.Seconds()), 1))))
}

// Defaults of Handler.
const (
	// DefaultVerifyTimeout leaves an edge time to answer within GitHub's 10 s.
	DefaultVerifyTimeout = 8 * time.Second
	// DefaultRetryAfter is the Retry-After sent with 503 answers when the server gives no hint.
	DefaultRetryAfter = 10 * time.Second
	// MaxRetryAfter caps a server's retry hint, so a misconfigured server cannot push a
	// provider's next attempt past its retry window.
	MaxRetryAfter = 5 * time.Minute
	// DefaultMaxBytesInFlight is the default of WithMaxBytesInFlight: eight bodies at the
	// server's ceiling, or thousands of ordinary ones, held at once.
	DefaultMaxBytesInFlight = 256 << 20
)

// ErrBytesInFlight is Outcome.Err of a request answered 503 with Retry-After because the
// handler held its WithMaxBytesInFlight bound of requests: the body was not read, or not read
// further, and the server was not called.
var ErrBytesInFlight = errors.New("client: the handler holds its bound of request bytes at once")

// bytesInFlightLogInterval bounds how often the handler logs requests refused at its bound.
const bytesInFlightLogInterval = 10 * time.Second

// HandlerOption configures Handler.
type HandlerOption func(*handler)

// EndpointFromPathValue takes the endpoint id from the named wildcard of the route the handler
// is registered under, e.g. EndpointFromPathValue("endpoint") for "/hooks/{endpoint}" on an
// http.ServeMux. This is the default, with the name "endpoint".
func EndpointFromPathValue(name string) HandlerOption {
	return EndpointFunc(func(r *http.Request) string { return r.PathValue(name) })
}

// EndpointFromPath takes the endpoint id from the URL path after prefix: with prefix "/hooks/",
// "/hooks/shop-stripe" is endpoint "shop-stripe". A path without the prefix, or with a further
// "/", addresses no endpoint.
func EndpointFromPath(prefix string) HandlerOption {
	return EndpointFunc(func(r *http.Request) string {
		rest, ok := strings.CutPrefix(r.URL.Path, prefix)
		if !ok || strings.Contains(rest, "/") {
			return ""
		}
		return rest
	})
}

// EndpointFunc takes the endpoint id from f. An id no endpoint can have (empty, over 128
// bytes, or with characters other than A-Z a-z 0-9 . _ -) is answered 404 without calling the
// server.
func EndpointFunc(f func(*http.Request) string) HandlerOption {
	return func(h *handler) { h.endpoint = f }
}

// WithVerifyTimeout bounds each request's work, reading the body included, from the handler's
// start (default DefaultVerifyTimeout); 0 means only the request's own context applies. The
// http.Server's ReadTimeout still applies to the body when it is shorter. Cutting a body read
// short takes the ResponseWriter's SetReadDeadline (http.ResponseController): behind a
// middleware that wraps the ResponseWriter without an Unwrap method, only the ReadTimeout
// bounds the read, so set one. Keep the timeout below
// the provider's own, so the provider hears a 503 rather than nothing, and below the
// http.Server's WriteTimeout: net/http drops an answer written after that deadline, so the
// provider would hear nothing even for a stored event.
func WithVerifyTimeout(d time.Duration) HandlerOption {
	return func(h *handler) { h.timeout = d }
}

// WithRetryAfter sets the Retry-After of 503 answers (default DefaultRetryAfter), rounded up to
// whole seconds, at least 1.
func WithRetryAfter(d time.Duration) HandlerOption {
	return func(h *handler) { h.retryAfter = d }
}

// WithMaxBytesInFlight bounds the requests (headers, URL and body) the handler holds at once,
// from the start of their reading to their answer (default DefaultMaxBytesInFlight; 0 or less:
// no bound). Each request reserves its headers, URL and the first 64 KiB of its Content-Length
// before its body is read, and body bytes past that as they arrive; one past the bound is
// answered 503 with Retry-After (WithRetryAfter) without reading (further), so the provider
// retries. A large Content-Length is not reserved whole before its bytes come: a client
// announcing one and sending nothing would hold that much of the bound for nothing. A single request larger than the whole bound passes when nothing else is held.
// Without a bound, anyone who can reach the handler could make it hold requests times the body
// limit (32 MiB each) until the kernel killed the process, cutting every delivery in flight. The heap holds a little over twice the bound (the body, with its
// read buffer's spare room, and the copy gRPC sends).
func WithMaxBytesInFlight(n int64) HandlerOption {
	return func(h *handler) { h.maxBytesInFlight = n }
}

// WithLogger receives the handler's log lines (default slog.Default()). They never contain
// bodies or header values.
func WithLogger(l *slog.Logger) HandlerOption {
	return func(h *handler) { h.log = l }
}

// WithObserver calls f after each request is answered, for access logs and metrics. r is the
// request the handler received, so values the caller put in its context are visible.
func WithObserver(f func(r *http.Request, o Outcome)) HandlerOption {
	return func(h *handler) { h.observe = f }
}

// Outcome describes how Handler answered one request.
type Outcome struct {
	// EndpointID is the endpoint the request addressed ("" if none). It comes from the URL, so
	// it is any string the caller chose unless Response says the endpoint exists.
	EndpointID string
	// Status is the HTTP status written.
	Status int
	// Response is the server's answer; nil when there is none.
	Response *hookverifyv1.VerifyResponse
	// Code is the gRPC status of the Verify call: OK with a Response, the failure otherwise.
	// Meaningful only when CalledVerifier.
	Code codes.Code
	// CalledVerifier says whether Verify was called.
	CalledVerifier bool
	// VerifierDuration is the time spent in Verify, retries included.
	VerifierDuration time.Duration
	// Duration is the handler's whole time, body reading included.
	Duration time.Duration
	// Err says why the provider did not get the server's reply: there is no Response, or
	// (a reply without a usable status) it could not be sent.
	Err error
}

// Verdict is Response's verdict, or VERDICT_UNSPECIFIED without one.
func (o Outcome) Verdict() hookverifyv1.Verdict { return o.Response.GetVerdict() }

type handler struct {
	conn             *Conn
	endpoint         func(*http.Request) string
	timeout          time.Duration
	retryAfter       time.Duration
	log              *slog.Logger
	observe          func(*http.Request, Outcome)
	maxBytesInFlight int64
	// bytes is the WithMaxBytesInFlight budget (nil: no bound); fullLog bounds how often its
	// refusals are logged.
	bytes   *budget.Bytes
	fullLog *ratelog.Limiter
}

// Handler returns an http.Handler that forwards each request to conn's server (see
// Conn.BuildRequest) and answers the provider with the server's HttpReply for every verdict:
// ACCEPTED, DUPLICATE, REJECTED and HANDSHAKE. When there is no verdict it answers:
//
//   - 404 for a request that addresses no endpoint (see EndpointFunc);
//   - 413 for a body over the WithMaxBodyBytes limit, and 400 for a body that could not be read
//     or a request that cannot be forwarded (ErrUnforwardable);
//   - 500 and an error log line for a body that code before the handler read and did not put
//     back (ErrBodyConsumed);
//   - 503 with Retry-After when the body did not arrive in time (the http.Server's ReadTimeout
//     or WithVerifyTimeout), or the server is unavailable or overloaded (UNAVAILABLE,
//     RESOURCE_EXHAUSTED with RetryInfo) or too slow (deadline exceeded), so the provider
//     retries;
//   - 503 with Retry-After, the body unread, for a request past the WithMaxBytesInFlight
//     bound (ErrBytesInFlight);
//   - 413 for RESOURCE_EXHAUSTED without RetryInfo: gRPC refused the message as larger than
//     the server's receive limit, which no retry can pass;
//   - 500 and an error log line for any other failure (UNAUTHENTICATED, PERMISSION_DENIED,
//     INVALID_ARGUMENT, ...): the edge is misconfigured, and the provider must retry later
//     rather than drop the event.
//
// Bodies and header values are never logged.
func Handler(conn *Conn, opts ...HandlerOption) http.Handler {
	h := &handler{conn: conn, timeout: DefaultVerifyTimeout, retryAfter: DefaultRetryAfter, log: slog.Default(), maxBytesInFlight: DefaultMaxBytesInFlight}
	EndpointFromPathValue("endpoint")(h)
	for _, o := range opts {
		o(h)
	}
	if h.maxBytesInFlight > 0 {
		h.bytes = budget.New(h.maxBytesInFlight)
		h.fullLog = ratelog.ForLog(h.log, bytesInFlightLogInterval, "requests refused at the bound of request bytes held at once")
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	o := h.serve(w, r)
	o.Duration = time.Since(start)
	if h.observe != nil {
		h.observe(r, o)
	}
}

func (h *handler) serve(w http.ResponseWriter, r *http.Request) Outcome {
	ctx := r.Context()
	if h.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timeout)
		defer cancel()
	}
	o := Outcome{EndpointID: h.endpoint(r)}
	if !ident.Valid(o.EndpointID) {
		o.Err = errors.New("the request addresses no endpoint")
		hopbyhop.CloseUnread(w, r)
		o.Status = writeJSON(w, http.StatusNotFound, `{"status":"rejected","reason":"unknown_endpoint"}`)
		return o
	}
	if h.bytes != nil {
		held := &budgetedBody{budget: h.bytes}
		// Released once the answer is written: until then the request (and gRPC's copy of
		// it, retries included) is held.
		defer held.release()
		// The headers and URL count too: up to 256 KiB of them, held while a body trickles
		// in or the call waits, need no body at all.
		n := requestHeadBytes(r)
		hasBody := r.Body != nil && r.Body != http.NoBody
		// A Content-Length over the body limit is answered 413 unread: nothing to reserve.
		// Only its first reservedAhead bytes are reserved before reading, the rest as it
		// arrives: a Content-Length is a claim anyone can make, and a few clients announcing
		// 32 MiB and sending nothing would otherwise hold the whole bound until --read-timeout.
		if hasBody && r.ContentLength > 0 && r.ContentLength <= h.conn.maxBodyBytes {
			held.ahead = min(r.ContentLength, reservedAhead)
		}
		if !held.reserve(n + held.ahead) {
			hopbyhop.CloseUnread(w, r)
			return h.refuseFull(ctx, w, o, ErrBytesInFlight)
		}
		if hasBody {
			// Read through a shallow copy, never by replacing r.Body: net/http holds r too,
			// and decides by its Body's type what to do with a body left unread (close the
			// connection of a request still waiting for "100 Continue", rather than read the
			// body it never asked for before answering); and a middleware that drains r.Body
			// after the answer would take bytes from the budget that are never given back.
			held.ReadCloser = r.Body
			r = r.WithContext(r.Context())
			r.Body = held
		}
	}
	// When ctx ends, cut the body read short, so a body that never comes is answered 503 in
	// time. Setting the deadline then, rather than ctx's deadline now, never extends the
	// server's ReadTimeout. A ResponseWriter that cannot (http.ErrNotSupported) leaves only
	// the ReadTimeout.
	stopReadCut := context.AfterFunc(ctx, func() { _ = http.NewResponseController(w).SetReadDeadline(time.Now()) })
	req, err := h.conn.BuildRequest(o.EndpointID, r)
	stopReadCut()
	if err != nil {
		o.Err = err
		// Whatever failed, the body was not read to its end.
		hopbyhop.CloseUnread(w, r)
		var netErr net.Error
		switch {
		case errors.Is(err, ErrBytesInFlight):
			return h.refuseFull(ctx, w, o, err)
		case errors.Is(err, ErrBodyTooLarge):
			o.Status = writeJSON(w, http.StatusRequestEntityTooLarge, `{"status":"rejected","reason":"body_too_large"}`)
		case errors.Is(err, ErrBodyConsumed):
			// The edge's own code read the body: the provider must retry once it is fixed,
			// not drop the delivery as 4xx answers make many do.
			h.log.ErrorContext(ctx, "the request body was read before the handler (r.ParseForm, r.FormValue or a middleware) and not put back; the edge is misconfigured", "endpoint", o.EndpointID, "err", err)
			o.Status = writeJSON(w, http.StatusInternalServerError, `{"status":"error"}`)
		case errors.As(err, &netErr) && netErr.Timeout():
			// A slow upload is transient; many providers never retry a 4xx.
			h.log.WarnContext(ctx, "request body read timed out; asking the provider to retry", "endpoint", o.EndpointID)
			setRetryAfter(w, h.retryAfter)
			o.Status = writeJSON(w, http.StatusServiceUnavailable, `{"status":"unavailable"}`)
		default:
			h.log.WarnContext(ctx, "webhook request not forwarded", "endpoint", o.EndpointID, "err", err)
			o.Status = writeJSON(w, http.StatusBadRequest, `{"status":"rejected","reason":"unreadable_request"}`)
		}
		return o
	}
	called := time.Now()
	resp, err := h.conn.Verifier.Verify(ctx, req)
	o.CalledVerifier, o.VerifierDuration, o.Code = true, time.Since(called), status.Code(err)
	if err != nil {
		o.Err = err
		if errors.Is(err, context.DeadlineExceeded) {
			o.Code = codes.DeadlineExceeded
		}
		switch {
		case o.Code == codes.ResourceExhausted && !hasRetryInfo(err):
			// Not backpressure, which carries RetryInfo, but gRPC refusing a message over the
			// server's receive limit (verifier.proto): the same body would be refused on every
			// retry, so the provider must not be told to retry it.
			h.log.WarnContext(ctx, "the request is larger than the verifier takes; answering 413", "endpoint", o.EndpointID, "err", status.Convert(err).Message())
			o.Status = writeJSON(w, http.StatusRequestEntityTooLarge, `{"status":"rejected","reason":"body_too_large"}`)
		case o.Code == codes.Unavailable, o.Code == codes.ResourceExhausted, o.Code == codes.DeadlineExceeded, o.Code == codes.Canceled:
			// Canceled because the provider hung up: nobody reads the answer. Canceled
			// otherwise (the Conn was closed) turns every delivery away, and is logged.
			if o.Code != codes.Canceled || r.Context().Err() == nil {
				h.log.WarnContext(ctx, "verifier unavailable; asking the provider to retry", "endpoint", o.EndpointID, "code", o.Code.String(), "err", status.Convert(err).Message())
			}
			setRetryAfter(w, h.retryHint(err))
			o.Status = writeJSON(w, http.StatusServiceUnavailable, `{"status":"unavailable"}`)
		default:
			h.log.ErrorContext(ctx, "verifier refused the call; the edge is misconfigured", "endpoint", o.EndpointID, "code", o.Code.String(), "err", status.Convert(err).Message())
			o.Status = writeJSON(w, http.StatusInternalServerError, `{"status":"error"}`)
		}
		return o
	}
	o.Response = resp
	reply := resp.GetReply()
	// A 1xx status would be sent as an informational response followed by an implicit 200.
	if reply == nil || reply.GetStatus() < 200 || reply.GetStatus() > 599 {
		o.Err = errors.New("the verifier answered without a usable reply")
		h.log.ErrorContext(ctx, "verifier answered without a usable reply", "endpoint", o.EndpointID, "verdict", resp.GetVerdict().String())
		o.Status = writeJSON(w, http.StatusInternalServerError, `{"status":"error"}`)
		return o
	}
	// The reply's headers replace those a middleware set under the same names (a default
	// Content-Type, say), so that the provider gets the reply as it is, not two values.
	fields := replyFields(reply.GetHeaders())
	for _, f := range fields {
		w.Header().Del(f.GetName())
	}
	for _, f := range fields {
		w.Header().Add(f.GetName(), f.GetValue())
	}
	if _, ok := w.Header()["Content-Type"]; !ok && len(reply.GetBody()) > 0 {
		// Without a Content-Type net/http would sniff one from the body and send it ("text/html"
		// for a challenge echoed back): a nil value sends none, as the reply has none.
		w.Header()["Content-Type"] = nil
	}
	w.WriteHeader(int(reply.GetStatus()))
	_, _ = w.Write(reply.GetBody())
	o.Status = int(reply.GetStatus())
	return o
}

// replyFields are the reply's header fields the handler can send as they are: not those that
// frame the message or describe the connection (Content-Length and the hop-by-hop fields,
// Transfer-Encoding among them), which net/http sets for the answer it writes, nor one whose
// name or value HTTP cannot carry. Written as the reply gave them, a Content-Length other than
// the body's cut the answer short, a Transfer-Encoding made net/http send a second one, and a
// control character in a value (net/http replaces only CR and LF) made the answer a malformed
// message: the provider read no status and retried a delivery already answered.
func replyFields(in []*hookverifyv1.HeaderField) []*hookverifyv1.HeaderField {
	out := make([]*hookverifyv1.HeaderField, 0, len(in))
	for _, f := range in {
		if httpguts.ValidHeaderFieldName(f.GetName()) && httpguts.ValidHeaderFieldValue(f.GetValue()) &&
			!hopbyhop.Is(f.GetName()) && !ascii.EqualFold(f.GetName(), "Content-Length") {
			out = append(out, f)
		}
	}
	return out
}

// refuseFull answers a request that would take the bodies held at once past the handler's
// bound: 503 with Retry-After, so the provider retries once the held requests are answered.
func (h *handler) refuseFull(ctx context.Context, w http.ResponseWriter, o Outcome, err error) Outcome {
	o.Err = err
	// Rate-limited: a flood of large requests would otherwise flood the log too.
	if ok, heldBack := h.fullLog.Allow(); ok {
		h.log.WarnContext(ctx, "holding the bound of request bytes at once; asking the provider to retry",
			"endpoint", o.EndpointID, "max_bytes_in_flight", h.bytes.Limit(), "not_logged_since_last", heldBack)
	}
	setRetryAfter(w, h.retryAfter)
	o.Status = writeJSON(w, http.StatusServiceUnavailable, `{"status":"unavailable"}`)
	return o
}

// requestHeadBytes is about what a request holds besides its body: header names and values,
// the host and the request target.
func requestHeadBytes(r *http.Request) int64 {
	n := len(r.Host) + len(r.RequestURI) + len(r.Method)
	for name, values := range r.Header {
		for _, v := range values {
			n += len(name) + len(v)
		}
	}
	return int64(n)
}

// reservedAhead is how much of a Content-Length a request reserves before its body is read:
// the whole of a typical delivery, so that one is refused unread when the bound is full, but
// not a large claim that nothing backs yet.
const reservedAhead = 64 << 10

// budgetedBody holds a request to the handler's byte budget: its head and up to reservedAhead
// of its Content-Length are reserved before reading, and body bytes past what is reserved as
// they arrive, before the reader gets them.
type budgetedBody struct {
	io.ReadCloser
	budget *budget.Bytes
	// held is reserved in all, given back by release; ahead is reserved for body bytes not
	// read yet.
	held, ahead int64
}

func (b *budgetedBody) reserve(n int64) bool {
	if !b.budget.Take(n, b.held) {
		return false
	}
	b.held += n
	return true
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if more := int64(n) - b.ahead; more > 0 {
		if !b.reserve(more) {
			return 0, ErrBytesInFlight
		}
		b.ahead = 0
	} else {
		b.ahead -= int64(n)
	}
	return n, err
}

func (b *budgetedBody) release() {
	b.budget.Give(b.held)
	b.held = 0
}

func writeJSON(w http.ResponseWriter, code int, body string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body))
	return code
}
