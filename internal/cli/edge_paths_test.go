package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawRequest sends one HTTP/1.1 request line as given (no client cleans its path) and returns
// the answer and its body.
func rawRequest(t *testing.T, addr, method, target string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: hooks.example.com\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", method, target)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// TestEdgeAnswersUncleanPaths404WithoutARedirect: http.ServeMux answered a path that is not
// clean (/hooks//ep, /hooks/./ep, /hooks/a/../ep) with a 307 to the cleaned one. A provider
// that follows it posts again to a URL it did not call (URL-signing providers then fail the
// signature, the others are verified under a URL nobody called), and most do not follow
// redirects, so the delivery fails. The Node edge answers 404 without calling the verifier; so
// must this one, as it answers any path the route does not take. "OPTIONS *" likewise: net/http
// answered it 200 itself, out of the access log; the Node edge answers 404.
func TestEdgeAnswersUncleanPaths404WithoutARedirect(t *testing.T) {
	v, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr)
	listen := logLine(t, edge.log, "edge listening")["addr"].(string)
	for _, tc := range []struct{ method, target string }{
		{"POST", "/hooks//ep"},
		{"POST", "/hooks/./ep"},
		{"POST", "/hooks/a/../ep"},
		{"POST", "/hooks/ep/."},
		{"POST", "//hooks/ep"},
		{"POST", "/hooks/ep/..?x=1"},
		{"POST", "http://hooks.example.com/hooks//ep"},
		{"POST", "http://hooks.example.com"}, // no path: ServeMux redirected to "/"
		{"GET", "//healthz"},
		{"GET", "/healthz/."},
		{"OPTIONS", "*"},
	} {
		resp, body := rawRequest(t, listen, tc.method, tc.target)
		if resp.StatusCode != http.StatusNotFound || body != "404 page not found\n" || resp.Header.Get("Location") != "" {
			t.Errorf("%s %s: %d %q (Location %q), want 404 %q and no redirect",
				tc.method, tc.target, resp.StatusCode, body, resp.Header.Get("Location"), "404 page not found\n")
		}
	}
	select {
	case <-v.arrived:
		t.Error("an unclean path reached the verifier")
	default:
	}
	// The clean ones are routed as before.
	if resp, body := rawRequest(t, listen, "GET", "/healthz"); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q", resp.StatusCode, body)
	}
	if resp, _ := rawRequest(t, listen, "POST", "/hooks/ep/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /hooks/ep/: %d, want 404", resp.StatusCode)
	}
	if !strings.Contains(edge.log.String(), `"path":"/hooks//ep"`) {
		t.Errorf("the access log has no line for /hooks//ep:\n%s", edge.log.String())
	}
}

// TestEdgeRouteEndingInDollarRedirectsNot: a --route "/in/{endpoint}/{$}" (one URL per endpoint,
// with a trailing slash) is taken, but http.ServeMux answered "/in/ep" with a 307 to "/in/ep/",
// the redirect to a URL the provider did not call that the subtree refusal and the unclean-path
// 404 are there to prevent: a URL-signing provider that follows it fails its check, and most do
// not follow it. The edge answers 404, as to any path its route does not take.
func TestEdgeRouteEndingInDollarRedirectsNot(t *testing.T) {
	v, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr, "--route", "POST /in/{endpoint}/{$}")
	listen := logLine(t, edge.log, "edge listening")["addr"].(string)
	for _, target := range []string{"/in/ep", "/in/ep?x=1", "http://hooks.example.com/in/ep"} {
		resp, body := rawRequest(t, listen, "POST", target)
		if resp.StatusCode != http.StatusNotFound || body != "404 page not found\n" || resp.Header.Get("Location") != "" {
			t.Errorf("POST %s: %d %q (Location %q), want 404 and no redirect", target, resp.StatusCode, body, resp.Header.Get("Location"))
		}
	}
	select {
	case <-v.arrived:
		t.Error("a path the route does not take reached the verifier")
	default:
	}
	// The health check and the route's own URLs are answered as before.
	if resp, body := rawRequest(t, listen, "GET", "/healthz"); resp.StatusCode != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz: %d %q", resp.StatusCode, body)
	}
	if resp, _ := rawRequest(t, listen, "PUT", "/healthz"); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT /healthz: %d, want 405", resp.StatusCode)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.Post("http://"+listen+"/in/ep/", "application/json", strings.NewReader("{}")); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-v.arrived:
	case <-time.After(10 * time.Second):
		t.Error("POST /in/ep/ did not reach the verifier")
	}
	v.finish()
	<-done
}
