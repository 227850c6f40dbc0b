package client_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http/httpguts"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// scriptedVerifier answers every Verify with what its script says, nothing recorded, so that a
// fuzz target can run it for long.
type scriptedVerifier struct {
	hookverifyv1.UnimplementedVerifierServiceServer
	mu     sync.Mutex
	answer func() (*hookverifyv1.VerifyResponse, error)
}

func (s *scriptedVerifier) Verify(context.Context, *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
	s.mu.Lock()
	answer := s.answer
	s.mu.Unlock()
	return answer()
}

// FuzzHandlerReply: the edge handler writes to the provider whatever the verifier answers (its
// HttpReply: status, headers, body; or a gRPC error with or without a RetryInfo hint), from a
// server that may be misconfigured, older or newer. FuzzHandlerHTTPRequest fuzzes the request
// and holds the reply fixed; this fuzzes the answer, written by a real net/http server to a real
// client. Properties:
//   - no panic, and the provider always gets a well-formed HTTP answer;
//   - a reply with a status of 200 to 599 reaches the provider with exactly that status and
//     exactly its body (none for 204 and 304, which carry none); any other status is a 500;
//   - each reply header that HTTP can carry reaches the provider with its value;
//   - a failure is 503 (UNAVAILABLE, RESOURCE_EXHAUSTED with RetryInfo, DEADLINE_EXCEEDED) with a
//     Retry-After of whole seconds within [1, 300], the server's hint rounded up when it gave a
//     valid one, or 413 (RESOURCE_EXHAUSTED without RetryInfo), or 500.
func FuzzHandlerReply(f *testing.F) {
	v := &scriptedVerifier{}
	conn := dial(f, serveVerifier(f, v), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	mux := http.NewServeMux()
	mux.Handle("POST /hooks/{endpoint}", client.Handler(conn, client.WithLogger(slog.New(slog.DiscardHandler))))
	srv := httptest.NewServer(mux)
	f.Cleanup(srv.Close)
	hc := srv.Client()

	f.Add(int32(200), "Content-Type", "application/json", "X-Hook-Secret", "s", []byte(`{"status":"accepted"}`), uint8(0), true, int64(0), int32(0))
	f.Add(int32(204), "", "", "", "", []byte("x"), uint8(0), false, int64(0), int32(0))
	f.Add(int32(199), "Content-Length", "3", "Transfer-Encoding", "chunked", []byte("abcdef"), uint8(0), false, int64(0), int32(0))
	f.Add(int32(600), "Connection", "close", "Content-Length", "99", []byte("a"), uint8(0), false, int64(0), int32(0))
	f.Add(int32(401), "X-A\r\nX-B", "v\r\nw", "Content-Type", "", []byte{0xff}, uint8(0), false, int64(0), int32(0))
	// Found by this target: a value with a control character other than HTAB, written as it was,
	// made the whole answer unreadable ("malformed MIME header line").
	f.Add(int32(420), "0", "0", "0", "\x10", []byte("0"), uint8(0), false, int64(0), int32(0))
	f.Add(int32(200), "Content-Length", "3", "", "", []byte("abcdef"), uint8(0), false, int64(0), int32(0))
	f.Add(int32(200), "Transfer-Encoding", "gzip", "", "", []byte("abcdef"), uint8(0), false, int64(0), int32(0))
	// Found by this target: the property asked for a 304's Content-Type, which net/http drops.
	f.Add(int32(304), "Content-TYpe", "", "", "", []byte(nil), uint8(0), false, int64(0), int32(0))
	f.Add(int32(200), "", "", "", "", []byte(nil), uint8(codes.Unavailable), true, int64(-5), int32(0))
	f.Add(int32(200), "", "", "", "", []byte(nil), uint8(codes.ResourceExhausted), true, int64(1<<62), int32(999_999_999))
	f.Add(int32(200), "", "", "", "", []byte(nil), uint8(codes.ResourceExhausted), false, int64(0), int32(0))
	f.Add(int32(200), "", "", "", "", []byte(nil), uint8(codes.Unavailable), true, int64(1), int32(-1))
	f.Add(int32(200), "", "", "", "", []byte(nil), uint8(codes.PermissionDenied), false, int64(0), int32(0))
	f.Fuzz(func(t *testing.T, code int32, n1, v1, n2, v2 string, body []byte, grpcCode uint8, hint bool, hintSeconds int64, hintNanos int32) {
		reply := &hookverifyv1.HttpReply{Status: code, Body: body}
		for _, h := range [][2]string{{n1, v1}, {n2, v2}} {
			if h[0] != "" {
				reply.Headers = append(reply.Headers, &hookverifyv1.HeaderField{Name: h[0], Value: h[1]})
			}
		}
		gc := codes.Code(grpcCode % 17)
		var failure error
		if gc != codes.OK {
			st := status.New(gc, "scripted")
			if hint {
				st, _ = st.WithDetails(&errdetails.RetryInfo{RetryDelay: &durationpb.Duration{Seconds: hintSeconds, Nanos: hintNanos}})
			}
			failure = st.Err()
		}
		// Proto strings are UTF-8: gRPC refuses to send others, and the edge gets an error.
		validReply := true
		for _, h := range reply.Headers {
			validReply = validReply && utf8Valid(h.Name) && utf8Valid(h.Value)
		}
		if failure == nil && !validReply {
			return
		}
		v.mu.Lock()
		v.answer = func() (*hookverifyv1.VerifyResponse, error) {
			if failure != nil {
				return nil, failure
			}
			return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_REJECTED, Reply: reply}, nil
		}
		v.mu.Unlock()

		resp, err := hc.Post(srv.URL+"/hooks/ep", "application/json", strings.NewReader(`{"id":"evt_1"}`))
		if err != nil {
			t.Fatalf("the provider got no well-formed answer (reply %d %q, failure %v): %v", code, reply.Headers, failure, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("the provider could not read the answer's body (reply %d %q %q): %v", code, reply.Headers, body, err)
		}

		if failure != nil {
			checkFailureAnswer(t, resp, gc, failure)
			return
		}
		if code < 200 || code > 599 {
			if resp.StatusCode != http.StatusInternalServerError {
				t.Fatalf("reply status %d answered %d, want 500", code, resp.StatusCode)
			}
			return
		}
		if resp.StatusCode != int(code) {
			t.Fatalf("reply status %d (headers %q) answered %d", code, reply.Headers, resp.StatusCode)
		}
		want := body
		if code == http.StatusNoContent || code == http.StatusNotModified {
			want = nil
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("reply %d with headers %q and body %q: the provider got body %q", code, reply.Headers, body, got)
		}
		for _, h := range reply.Headers {
			if !httpguts.ValidHeaderFieldName(h.Name) || !httpguts.ValidHeaderFieldValue(h.Value) || framing(h.Name) {
				continue
			}
			if code == http.StatusNotModified && http.CanonicalHeaderKey(h.Name) == "Content-Type" {
				// net/http sends a 304 without Content-Type (RFC 9110, 15.4.5: a 304 carries
				// the metadata of a representation not sent).
				continue
			}
			if vals := resp.Header.Values(h.Name); !contains(vals, strings.Trim(h.Value, " \t")) {
				t.Fatalf("reply header %q: %q reached the provider as %q", h.Name, h.Value, vals)
			}
		}
	})
}

// framing reports whether name is a header net/http's client consumes or the connection's
// framing sets: not compared.
func framing(name string) bool {
	switch http.CanonicalHeaderKey(name) {
	case "Content-Length", "Transfer-Encoding", "Connection", "Trailer", "Te", "Upgrade", "Keep-Alive",
		"Proxy-Connection":
		return true
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// checkFailureAnswer holds the answer to a failed call to the handler's documented mapping.
func checkFailureAnswer(t *testing.T, resp *http.Response, gc codes.Code, failure error) {
	t.Helper()
	var retryInfo *errdetails.RetryInfo
	for _, d := range status.Convert(failure).Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retryInfo = ri
		}
	}
	want := http.StatusInternalServerError
	switch {
	case gc == codes.ResourceExhausted && retryInfo == nil:
		want = http.StatusRequestEntityTooLarge
	case gc == codes.Unavailable, gc == codes.ResourceExhausted, gc == codes.DeadlineExceeded, gc == codes.Canceled:
		want = http.StatusServiceUnavailable
	}
	if resp.StatusCode != want {
		t.Fatalf("failure %v answered %d, want %d", failure, resp.StatusCode, want)
	}
	if want != http.StatusServiceUnavailable {
		return
	}
	ra := resp.Header.Get("Retry-After")
	secs, err := strconv.Atoi(ra)
	if err != nil || strings.Trim(ra, "0123456789") != "" || secs < 1 || secs > int(client.MaxRetryAfter/time.Second) {
		t.Fatalf("failure %v: Retry-After %q, want whole seconds in [1, %d]", failure, ra, int(client.MaxRetryAfter/time.Second))
	}
	wantSecs := int(client.DefaultRetryAfter / time.Second)
	if retryInfo != nil && retryInfo.GetRetryDelay().IsValid() {
		d := min(max(retryInfo.GetRetryDelay().AsDuration(), time.Second), client.MaxRetryAfter)
		wantSecs = int((d + time.Second - 1) / time.Second)
	}
	if secs != wantSecs {
		t.Fatalf("failure %v: Retry-After %d, want %d", failure, secs, wantSecs)
	}
}

// serveVerifier serves v on a loopback port until the test ends and returns the address.
func serveVerifier(t testing.TB, v hookverifyv1.VerifierServiceServer) string {
	t.Helper()
	g := grpc.NewServer()
	hookverifyv1.RegisterVerifierServiceServer(g, v)
	return serveGRPC(t, g)
}
