package client

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// The Node edge's limits (examples/node-edge/test/agreement.test.js) follow these: a
// proxy's credential is not counted towards MaxHeaderBytes, Connection is towards
// MaxHeaderCount.
func TestHopByHopLimitsAsNodeEdge(t *testing.T) {
	r, _ := http.NewRequest("POST", "http://h.example/hooks/ep", nil)
	r.Header.Set("X-Big", strings.Repeat("a", 255<<10))
	r.Header.Set("Proxy-Authorization", "Basic "+strings.Repeat("b", 8<<10))
	if _, err := forwardHeaders(r); err != nil {
		t.Fatalf("hop-by-hop bytes counted: %v", err)
	}
	r, _ = http.NewRequest("POST", "http://h.example/hooks/ep", nil)
	for i := range 498 {
		r.Header.Set(fmt.Sprintf("X-N%d", i), "v")
	}
	r.Header.Set("Connection", "close")
	if out, err := forwardHeaders(r); err != nil || len(out) != 499 {
		t.Fatalf("500 headers with Connection: %d forwarded, %v", len(out), err)
	}
	r.Header.Set("Keep-Alive", "1")
	if _, err := forwardHeaders(r); err == nil {
		t.Fatal("501 headers forwarded")
	}
}

// The Node edge forwards an absolute-form target's host as Host as this does
// (examples/node-edge/test/agreement.test.js): net/http's r.Host, without userinfo.
func TestAbsoluteFormUserinfoNotInHost(t *testing.T) {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("POST http://user:s3cret@target.example:8080/hooks/ep HTTP/1.1\r\nHost: other.example\r\nContent-Length: 0\r\n\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	out, err := forwardHeaders(r)
	if err != nil {
		t.Fatal(err)
	}
	if out[0].GetName() != "Host" || out[0].GetValue() != "target.example:8080" {
		t.Fatalf("Host forwarded %s: %s", out[0].GetName(), out[0].GetValue())
	}
}
