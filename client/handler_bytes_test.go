package client_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// heldVerifier answers Verify only once released, and counts the body bytes it holds at once:
// the bodies the handler holds while their calls wait on a slow server.
type heldVerifier struct {
	hookverifyv1.VerifierServiceClient

	mu             sync.Mutex
	held, maxHeld  int64
	calls, waiting int
	release        chan struct{}
}

func newHeldVerifier() *heldVerifier { return &heldVerifier{release: make(chan struct{})} }

func (v *heldVerifier) Verify(ctx context.Context, req *hookverifyv1.VerifyRequest, _ ...grpc.CallOption) (*hookverifyv1.VerifyResponse, error) {
	n := int64(len(req.GetBody()))
	v.mu.Lock()
	v.held += n
	v.maxHeld = max(v.maxHeld, v.held)
	v.calls++
	v.waiting++
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		v.held -= n
		v.waiting--
		v.mu.Unlock()
	}()
	select {
	case <-v.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	runtime.KeepAlive(req) // held while waiting, as the client's retries hold it
	return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED, Reply: &hookverifyv1.HttpReply{Status: 200}}, nil
}

func (v *heldVerifier) counts() (calls, waiting int, maxHeld int64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls, v.waiting, v.maxHeld
}

// unsized hides a reader's length, so the HTTP client sends it chunked, without Content-Length.
type unsized struct{ r io.Reader }

func (u unsized) Read(p []byte) (int, error) { return u.r.Read(p) }

// heldHandler serves a Handler whose calls wait on v, with the given options.
func heldHandler(t *testing.T, v *heldVerifier, opts ...client.HandlerOption) (*httptest.Server, *outcomes) {
	t.Helper()
	conn := dial(t, "127.0.0.1:1") // never called: v answers
	conn.Verifier = v
	var seen outcomes
	opts = append([]client.HandlerOption{client.EndpointFromPath("/hooks/"), client.WithLogger(slog.New(slog.DiscardHandler)),
		client.WithVerifyTimeout(time.Minute), client.WithObserver(seen.observe)}, opts...)
	srv := httptest.NewServer(client.Handler(conn, opts...))
	t.Cleanup(srv.Close)
	return srv, &seen
}

func post(t *testing.T, url string, body io.Reader) (int, string, error) {
	t.Helper()
	resp, err := http.Post(url, "application/json", body)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// TestHandlerBoundsTheBodiesItHoldsAtOnce: the handler held every body it read while its call
// waited, so unauthenticated clients posting large bodies at once (or a slow server under
// ordinary traffic) grew the edge's heap without bound until the kernel killed it, cutting
// every delivery in flight. With WithMaxBytesInFlight the bodies held at once stay within the
// bound, with and without Content-Length, and the rest are answered 503 with Retry-After.
func TestHandlerBoundsTheBodiesItHoldsAtOnce(t *testing.T) {
	const (
		bound    = 4 << 20
		size     = 1 << 20
		requests = 24
	)
	v := newHeldVerifier()
	srv, seen := heldHandler(t, v, client.WithMaxBytesInFlight(bound))
	body := bytes.Repeat([]byte("x"), size) // shared, so the senders hold no copies

	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	type answer struct {
		status     int
		retryAfter string
		err        error
	}
	answers := make(chan answer, requests)
	for i := range requests {
		go func() {
			var r io.Reader = bytes.NewReader(body)
			if i%2 == 1 {
				r = unsized{r}
			}
			status, retryAfter, err := post(t, srv.URL+"/hooks/ep", r)
			answers <- answer{status, retryAfter, err}
		}()
	}
	// Wait until every request is either waiting in Verify or answered.
	var got []answer
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, waiting, _ := v.counts()
		select {
		case a := <-answers:
			got = append(got, a)
			continue
		default:
		}
		if waiting+len(got) == requests {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiting and %d answered of %d requests after 20 s", waiting, len(got), requests)
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.GC()
	var during runtime.MemStats
	runtime.ReadMemStats(&during)
	grown := int64(during.HeapAlloc) - int64(before.HeapAlloc)
	_, waiting, maxHeld := v.counts()
	t.Logf("%d waiting, %d answered; verifier held at most %d bytes; heap grew %d bytes (%d to %d)", waiting, len(got), maxHeld, grown, before.HeapAlloc, during.HeapAlloc)
	if maxHeld > bound {
		t.Errorf("the verifier held %d body bytes at once, over the bound of %d", maxHeld, bound)
	}
	if grown > 3*bound {
		t.Errorf("the heap grew %d bytes holding the bodies, over 3 times the bound of %d", grown, bound)
	}
	close(v.release)
	for len(got) < requests {
		got = append(got, <-answers)
	}
	accepted, refused := 0, 0
	for _, a := range got {
		switch {
		case a.err != nil:
			// A client still sending a refused body may see the connection closed first.
			refused++
		case a.status == 200:
			accepted++
		case a.status == http.StatusServiceUnavailable && a.retryAfter != "":
			refused++
		default:
			t.Errorf("answer %d (Retry-After %q), want 200 or 503 with Retry-After", a.status, a.retryAfter)
		}
	}
	if accepted == 0 || refused == 0 {
		t.Errorf("%d accepted, %d refused; want some of each", accepted, refused)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	marked := 0
	for _, o := range seen.all {
		if errors.Is(o.Err, client.ErrBytesInFlight) {
			marked++
			if o.Status != http.StatusServiceUnavailable || o.CalledVerifier {
				t.Errorf("a refusal answered %d, called the verifier %v; want 503 without a call", o.Status, o.CalledVerifier)
			}
		}
	}
	if marked == 0 {
		t.Error("no Outcome says ErrBytesInFlight")
	}
}

// TestHandlerLetsARequestLargerThanTheBoundPassAlone: a single request over the whole bound is
// refused only while something else is held, or a bound below the body limit would refuse such
// a delivery for ever; and the bytes go back once each request is answered.
func TestHandlerLetsARequestLargerThanTheBoundPassAlone(t *testing.T) {
	t.Parallel()
	v := newHeldVerifier()
	close(v.release)
	srv, _ := heldHandler(t, v, client.WithMaxBytesInFlight(1<<20))
	body := bytes.Repeat([]byte("y"), 3<<20)
	for i := range 6 {
		var r io.Reader = bytes.NewReader(body)
		if i%2 == 1 {
			r = unsized{r}
		}
		status, _, err := post(t, srv.URL+"/hooks/ep", r)
		if err != nil || status != 200 {
			t.Fatalf("request %d (chunked %v) alone over the bound: %d, %v; want 200", i, i%2 == 1, status, err)
		}
	}
}

// TestHandlerCountsHeadersInTheBound: up to 256 KiB of headers, held while a body trickles in
// or a call waits, take memory as a body does; a request without a body is no exception.
func TestHandlerCountsHeadersInTheBound(t *testing.T) {
	t.Parallel()
	v := newHeldVerifier()
	srv, _ := heldHandler(t, v, client.WithMaxBytesInFlight(64<<10))
	send := func() (int, error) {
		req, _ := http.NewRequest("POST", srv.URL+"/hooks/ep", nil)
		req.Header.Set("X-Padding", string(bytes.Repeat([]byte("p"), 40<<10)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	first := holdOneHead(t, srv, v, 40<<10)
	if status, err := send(); err != nil || status != http.StatusServiceUnavailable {
		t.Errorf("a second 40 KiB head past a 64 KiB bound: %d, %v; want 503", status, err)
	}
	close(v.release)
	if status := <-first; status != 200 {
		t.Errorf("the first request: %d, want 200", status)
	}
	if status, err := send(); err != nil || status != 200 {
		t.Errorf("once the first was answered: %d, %v; want 200", status, err)
	}
}

// TestBuildRequestRefusesTooManyHeadersBeforeCopyingThem: 256 KiB of tiny headers are some
// 37,000 values, which net/http already holds as a 4 MB map; BuildRequest copied each into a
// HeaderField before counting them against the server's 500, doubling what one hostile request
// costs the edge only to refuse it.
func TestBuildRequestRefusesTooManyHeadersBeforeCopyingThem(t *testing.T) {
	conn := dial(t, "127.0.0.1:1")
	req := httptest.NewRequest("POST", "http://hooks.example.com/hooks/ep", nil)
	for i := range 37000 {
		req.Header["A"+strconv.Itoa(i)] = []string{""}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := conn.BuildRequest("ep", req)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, client.ErrUnforwardable) {
		t.Fatalf("BuildRequest: %v, want ErrUnforwardable", err)
	}
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 1<<20 {
		t.Errorf("refusing 37,000 headers allocated %d bytes, want under 1 MiB", allocated)
	}
}
