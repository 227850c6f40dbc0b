package client_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// newConn dials nothing in particular: BuildRequest does not touch the network.
func newConn(t *testing.T, opts ...client.Option) *client.Conn {
	return dial(t, "127.0.0.1:1", opts...)
}

func TestBuildRequestURL(t *testing.T) {
	t.Parallel()
	const target = "/hooks/a%41b?q=a+b&q=%2f&z"
	cases := []struct {
		name  string
		opts  []client.Option
		setup func(r *http.Request)
		want  string
	}{
		{"plain HTTP, request URI untouched", nil, nil, "http://hooks.example.com" + target},
		{"TLS", nil, func(r *http.Request) { r.TLS = &tls.ConnectionState{} }, "https://hooks.example.com" + target},
		{"X-Forwarded-Proto ignored unless trusted", nil, func(r *http.Request) { r.Header.Set("X-Forwarded-Proto", "https") }, "http://hooks.example.com" + target},
		{"X-Forwarded-Proto trusted", []client.Option{client.WithTrustForwardedProto()}, func(r *http.Request) { r.Header.Set("X-Forwarded-Proto", "HTTPS, http") }, "https://hooks.example.com" + target},
		{"X-Forwarded-Proto nonsense", []client.Option{client.WithTrustForwardedProto()}, func(r *http.Request) { r.Header.Set("X-Forwarded-Proto", "gopher") }, "http://hooks.example.com" + target},
		{"public URL base", []client.Option{client.WithPublicURLBase("https://public.example.com/")}, nil, "https://public.example.com" + target},
		{"public URL base with a path", []client.Option{client.WithPublicURLBase("https://public.example.com/edge")}, nil, "https://public.example.com/edge" + target},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("POST", "http://hooks.example.com"+target, strings.NewReader("{}"))
			r.RequestURI = target // as net/http sets it for an origin-form request
			r.TLS = nil
			if tc.setup != nil {
				tc.setup(r)
			}
			req, err := newConn(t, tc.opts...).BuildRequest("ep", r)
			if err != nil {
				t.Fatal(err)
			}
			if req.GetUrl() != tc.want {
				t.Errorf("url %q, want %q", req.GetUrl(), tc.want)
			}
			if req.GetMethod() != "POST" || req.GetEndpointId() != "ep" || string(req.GetBody()) != "{}" {
				t.Errorf("request %v", req)
			}
		})
	}
}

func TestBuildRequestHeaders(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("POST", "http://hooks.example.com/x", strings.NewReader("{}"))
	r.Header.Add("X-B", "1")
	r.Header.Add("X-A", "2")
	r.Header.Add("X-B", "3")
	r.Header.Add("X-B", "2")
	req, err := newConn(t).BuildRequest("ep", r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range req.GetHeaders() {
		got = append(got, h.GetName()+": "+h.GetValue())
	}
	want := []string{"Host: hooks.example.com", "X-A: 2", "X-B: 1", "X-B: 3", "X-B: 2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("headers\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestBuildRequestRefuses covers the requests that are refused rather than forwarded, and
// checks through a recording server that Verify then makes no call.
func TestBuildRequestRefuses(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	conn := dial(t, f.start(t), client.WithMaxBodyBytes(10))
	cases := []struct {
		name  string
		setup func(r *http.Request)
		want  error
	}{
		{"header value not UTF-8", func(r *http.Request) { r.Header["Stripe-Signature"] = []string{"t=1,v1=\xff\xfe"} }, client.ErrUnforwardable},
		{"URL not UTF-8", func(r *http.Request) { r.RequestURI = "/hooks/\xff" }, client.ErrUnforwardable},
		// HTTP/1.0 may leave Host out: there is then no absolute URL, which the server requires.
		{"no Host", func(r *http.Request) { r.RequestURI, r.Host, r.URL.Host = "/hooks/ep", "", "" }, client.ErrUnforwardable},
		// Past the server's limits: refused on every retry, and with a large body past its gRPC
		// receive limit, which would look like an overloaded server and be retried.
		{"headers over the server's byte limit", func(r *http.Request) { r.Header.Set("X-Big", strings.Repeat("a", client.MaxHeaderBytes)) }, client.ErrUnforwardable},
		{"more headers than the server takes", func(r *http.Request) {
			for i := range client.MaxHeaderCount {
				r.Header.Add(fmt.Sprintf("X-H%d", i), "v")
			}
		}, client.ErrUnforwardable},
		{"URL over the server's limit", func(r *http.Request) { r.RequestURI = "/hooks/ep?q=" + strings.Repeat("a", client.MaxURLBytes) }, client.ErrUnforwardable},
		// net/http accepts a method of any length; anyone on the internet can send one.
		{"method over the server's limit", func(r *http.Request) { r.Method = strings.Repeat("A", client.MaxMethodBytes+1) }, client.ErrUnforwardable},
		{"body over the limit", func(r *http.Request) { r.Body = io.NopCloser(strings.NewReader("01234567890")); r.ContentLength = -1 }, client.ErrBodyTooLarge},
		{"Content-Length over the limit", func(r *http.Request) { r.ContentLength = 11 }, client.ErrBodyTooLarge},
		{"body read fails", func(r *http.Request) { r.Body = io.NopCloser(iotest.ErrReader(errors.New("connection reset"))) }, client.ErrBodyRead},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://hooks.example.com/hooks/ep", strings.NewReader("0123456789"))
			tc.setup(r)
			_, err := conn.Verify(context.Background(), "ep", r)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), "t=1") {
				t.Errorf("the error quotes a header value: %v", err)
			}
		})
	}
	if n := f.count("Verify"); n != 0 {
		t.Errorf("%d refused requests reached the server", n)
	}
	// Exactly at the limit is fine.
	r := httptest.NewRequest("POST", "http://hooks.example.com/hooks/ep", strings.NewReader("0123456789"))
	resp, err := conn.Verify(context.Background(), "ep", r)
	if err != nil || resp.GetVerdict() != hookverifyv1.Verdict_VERDICT_ACCEPTED {
		t.Fatalf("body at the limit: %v %v", resp, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if got := string(f.requests[0].GetBody()); got != "0123456789" {
		t.Errorf("forwarded body %q", got)
	}
}

// FuzzBuildRequest feeds arbitrary header values, request URIs and bodies: BuildRequest never
// panics, refuses exactly the requests with invalid UTF-8, and forwards the rest byte for byte.
func FuzzBuildRequest(f *testing.F) {
	f.Add("t=1,v1=abc", "/hooks/e?x=1", []byte(`{"id":"evt_1"}`))
	f.Add("\xff", "/hooks/%zz", []byte{})
	f.Add("a\x00b", "/\xc3\x28", []byte("\x00\xff"))
	f.Add("v", "http://a b/x", []byte{})          // an authority that is no host: unforwardable
	f.Add("v", "https://u@h.example/x", []byte{}) // userinfo: unforwardable
	f.Add("v", "https://h.example/x?y", []byte{})
	conn, err := client.Dial("127.0.0.1:1", client.WithMaxBodyBytes(1<<10))
	if err != nil {
		f.Fatal(err)
	}
	defer conn.Close()
	f.Fuzz(func(t *testing.T, value, uri string, body []byte) {
		r := &http.Request{
			Method:        "POST",
			Host:          "hooks.example.com",
			RequestURI:    uri,
			URL:           &url.URL{Path: "/"},
			Header:        http.Header{"X-Value": {value, value}},
			Body:          io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)),
		}
		req, err := conn.BuildRequest("e", r)
		valid := utf8.ValidString(value) && utf8.ValidString(uri)
		switch {
		case len(body) > 1<<10:
			if !errors.Is(err, client.ErrBodyTooLarge) && !errors.Is(err, client.ErrUnforwardable) {
				t.Fatalf("oversize body: %v", err)
			}
		case !valid:
			if !errors.Is(err, client.ErrUnforwardable) {
				t.Fatalf("invalid UTF-8 forwarded: %v", err)
			}
		case uri != "" && !strings.HasPrefix(uri, "/") && !isAbsoluteURI(uri):
			// Neither a path nor an http(s) URL ("ftp://h/x"): no URL to forward.
			if !errors.Is(err, client.ErrUnforwardable) {
				t.Fatalf("request URI %q, neither a path nor an http(s) URL, forwarded: %v", uri, err)
			}
		case isAbsoluteURI(uri) && uri != "" && !hasHost(uri):
			if !errors.Is(err, client.ErrUnforwardable) {
				t.Fatalf("absolute request URI %q without a host forwarded: %v", uri, err)
			}
		case len("http://hooks.example.com"+uri) > client.MaxURLBytes:
			if !errors.Is(err, client.ErrUnforwardable) {
				t.Fatalf("a URL above the server's limit forwarded: %v", err)
			}
		case isAbsoluteURI(uri) && uri != "" && !plainHostPort(authorityOf(uri)) && errors.Is(err, client.ErrUnforwardable):
			// An authority that is no host[:port] ("http://a b/", userinfo) is the request's
			// fault, refused as unforwardable; this model knows a plain one (letters, digits,
			// dots, hyphens, a port) is a host, and such a URI must go through.
		case err != nil:
			t.Fatalf("valid request refused: %v", err)
		default:
			if !bytes.Equal(req.GetBody(), body) || req.GetHeaders()[1].GetValue() != value || req.GetHeaders()[2].GetValue() != value {
				t.Fatal("request altered")
			}
			if !isAbsoluteURI(uri) && req.GetUrl() != "http://hooks.example.com"+uri || uri != "" && isAbsoluteURI(uri) && req.GetUrl() != uri {
				t.Fatalf("url %q from request URI %q", req.GetUrl(), uri)
			}
		}
	})
}

// authorityOf is an absolute URI's authority: what follows "://" up to its path, query or
// fragment.
func authorityOf(uri string) string {
	_, rest, _ := strings.Cut(uri, "://")
	if end := strings.IndexAny(rest, "/?#"); end >= 0 {
		rest = rest[:end]
	}
	return rest
}

// plainHostPort reports whether hostport is a host name of letters, digits, dots and hyphens,
// with an optional port of digits: a host[:port] beyond doubt.
func plainHostPort(hostport string) bool {
	host, port, hasPort := strings.Cut(hostport, ":")
	if host == "" || strings.Trim(host, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-") != "" {
		return false
	}
	return !hasPort || strings.Trim(port, "0123456789") == ""
}

// hasHost reports whether an absolute URI has an authority before its path, query or fragment.
func hasHost(uri string) bool {
	_, rest, _ := strings.Cut(uri, "://")
	return rest != "" && !strings.ContainsRune("/?#", rune(rest[0]))
}

func isAbsoluteURI(uri string) bool {
	// The scheme in any case (RFC 3986 3.1).
	lower := strings.ToLower(uri)
	return strings.HasPrefix(lower, "http://") || strings.HasPrefix(lower, "https://") || uri == ""
}

// TestBuildRequestURLOfAnInProcessRequest: a request made with http.NewRequest (a test of the
// edge, a program replaying a delivery through Conn.Verify) has no TLS state and no
// RequestURI; the URL it was made for is the one forwarded, scheme included. Forwarded as
// http, every delivery of a provider that signs the URL (Twilio, Square, HubSpot) fails.
func TestBuildRequestURLOfAnInProcessRequest(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"https://hooks.example.com/hooks/ep?b=2&a=%2F", "http://hooks.example.com:8080/hooks/ep"} {
		r, err := http.NewRequest("POST", u, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req, err := newConn(t).BuildRequest("ep", r)
		if err != nil {
			t.Fatal(err)
		}
		if req.GetUrl() != u {
			t.Errorf("forwarded URL %q, want %q", req.GetUrl(), u)
		}
	}
}

// TestDialRefusesAPublicURLBaseThatCannotBeOne: the forwarded URL is the base followed by the
// request URI, and URL-signing providers sign that URL byte for byte. A base that cannot be
// the front of the URL a provider called (no scheme, credentials, a query or fragment, white
// space) would fail every such delivery with a 4xx, which most providers never retry; Dial
// refuses it, as hookverify edge does its --public-url-base, without quoting credentials.
func TestDialRefusesAPublicURLBaseThatCannotBeOne(t *testing.T) {
	t.Parallel()
	for _, base := range []string{"hooks.example.com", "//hooks.example.com", "https://", "https://u:hunter2@hooks.example.com",
		"https://hooks.example.com?x=1", "https://hooks.example.com/#f", "https://hooks.example.com /edge", "ftp://hooks.example.com"} {
		conn, err := client.Dial("127.0.0.1:1", client.WithPublicURLBase(base))
		if err == nil {
			conn.Close()
			t.Errorf("Dial accepted the public URL base %q", base)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error quotes credentials: %v", err)
		}
	}
	for _, base := range []string{"https://hooks.example.com", "https://hooks.example.com/", "http://10.0.0.1:8080/edge"} {
		conn, err := client.Dial("127.0.0.1:1", client.WithPublicURLBase(base))
		if err != nil {
			t.Errorf("Dial refused the public URL base %q: %v", base, err)
			continue
		}
		conn.Close()
	}
}

// TestBuildRequestRefusesAnAbsoluteTargetWithoutHost: net/http takes a request line in
// absolute form with an empty authority ("POST http:///hooks/ep", the Host header then names
// the host), and BuildRequest forwarded that target as the URL. The server refuses a URL
// without a host (INVALID_ARGUMENT), which the edge answers 500 and logs as its own
// misconfiguration: anyone could fill the edge's error log and page its operator with one
// line. Such a URL is invalid (RFC 9110 4.2.1: a recipient must reject an http URI with an
// empty host): it is the request's fault, 400, as for every request that cannot be forwarded.
func TestBuildRequestRefusesAnAbsoluteTargetWithoutHost(t *testing.T) {
	t.Parallel()
	conn, err := client.Dial("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, target := range []string{"http:///hooks/ep", "https:///hooks/ep?x=1", "http://?x=1", "https://"} {
		raw := "POST " + target + " HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Length: 2\r\n\r\n{}"
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			continue // net/http refuses it itself
		}
		req, err := conn.BuildRequest("ep", r)
		if !errors.Is(err, client.ErrUnforwardable) {
			t.Errorf("BuildRequest(%s) = url %q, %v; want ErrUnforwardable", target, req.GetUrl(), err)
		}
	}
	// The absolute form with a host is forwarded as received.
	raw := "POST https://hooks.example.com/hooks/ep?x=1 HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Length: 2\r\n\r\n{}"
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if req, err := conn.BuildRequest("ep", r); err != nil || req.GetUrl() != "https://hooks.example.com/hooks/ep?x=1" {
		t.Errorf("BuildRequest(absolute form) = %v, %v", req.GetUrl(), err)
	}
}

// TestBuildRequestRefusesAnHTTP2AuthorityWithoutHost: over HTTP/1.1 net/http refuses a
// Host header that is no host ("/x"), but its HTTP/2 server takes any :authority, and
// r.Host is then that text: BuildRequest made "https:///evil/hooks/ep", a URL without a host,
// which the server refuses as the edge's fault (INVALID_ARGUMENT, answered 500 and logged as a
// misconfiguration). Anyone reaching a TLS edge (HTTP/2 by default) raised that alarm with one
// request; it is the request's fault, as with the absolute form without a host.
func TestBuildRequestRefusesAnHTTP2AuthorityWithoutHost(t *testing.T) {
	t.Parallel()
	conn, err := client.Dial("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	type result struct {
		host, url string
		err       error
	}
	results := make(chan result, 4)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := conn.BuildRequest("ep", r)
		results <- result{r.Host, req.GetUrl(), err}
	}))
	ts.EnableHTTP2 = true
	ts.StartTLS()
	defer ts.Close()

	for _, authority := range []string{"/evil", "?x", "#x"} {
		c, _ := postWithHTTP2Authority(t, ts.Listener.Addr().String(), authority)
		select {
		case r := <-results:
			if !errors.Is(r.err, client.ErrUnforwardable) {
				t.Errorf(":authority %q: BuildRequest = url %q, %v; want ErrUnforwardable", r.host, r.url, r.err)
			}
		case <-time.After(5 * time.Second):
			t.Logf(":authority %q: refused by net/http itself", authority)
		}
		c.Close()
	}
}

// postWithHTTP2Authority sends, over TLS to addr, an HTTP/2 POST to /hooks/ep with the given
// :authority, raw: Go's HTTP/2 client would refuse to send most of the values these tests
// need. It returns the connection and its framer, to read the answer.
func postWithHTTP2Authority(t *testing.T, addr, authority string) (net.Conn, *http2.Framer) {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c)
	fr.WriteSettings()
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for _, f := range []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: authority}, {Name: ":path", Value: "/hooks/ep"}} {
		enc.WriteField(f)
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true, EndStream: true})
	return c, fr
}
