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
	listen := edge.log.logLine(t, "edge listening")["addr"].(string)
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
