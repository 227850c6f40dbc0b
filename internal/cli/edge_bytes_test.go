package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// stalledVerifier answers Verify once its test ends, saying when each call arrives.
type stalledVerifier struct {
	hookverifyv1.UnimplementedVerifierServiceServer
	arrived chan struct{}
	release chan struct{}
	// finish answers every call, held or to come.
	finish func()
}

func (v *stalledVerifier) Verify(ctx context.Context, _ *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
	v.arrived <- struct{}{}
	select {
	case <-v.release:
	case <-ctx.Done():
	}
	return &hookverifyv1.VerifyResponse{Verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED, Reply: &hookverifyv1.HttpReply{Status: 200}}, nil
}

// startStalledVerifier serves a stalledVerifier on loopback until the test ends.
func startStalledVerifier(t *testing.T) (*stalledVerifier, string) {
	t.Helper()
	v := &stalledVerifier{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	v.finish = sync.OnceFunc(func() { close(v.release) })
	g := grpc.NewServer()
	hookverifyv1.RegisterVerifierServiceServer(g, v)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go g.Serve(lis)
	t.Cleanup(func() { v.finish(); g.Stop() })
	return v, lis.Addr().String()
}

// TestEdgeBoundsTheBytesItHoldsAtOnce: the edge held every body it read until its answer,
// without bound, so anyone on the internet could grow its heap until the kernel killed it.
// Past --max-bytes-in-flight a request is answered 503 with Retry-After, counted in
// hookverify_edge_bytes_in_flight_refusals_total and logged (rate-limited).
func TestEdgeBoundsTheBytesItHoldsAtOnce(t *testing.T) {
	v, addr := startStalledVerifier(t)
	edge := startEdge(t, "--listen", "127.0.0.1:0", "--verifier", addr, "--max-bytes-in-flight", "1048576", "--log-level", "debug")
	base := "http://" + logLine(t, edge.log, "edge listening")["addr"].(string)
	body := bytes.Repeat([]byte("z"), 700<<10)
	first := make(chan error, 1)
	go func() {
		resp, err := http.Post(base+"/hooks/shop", "application/json", bytes.NewReader(body))
		if err == nil {
			resp.Body.Close()
		}
		first <- err
	}()
	select {
	case <-v.arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request did not reach the verifier")
	}
	for i := range 3 {
		resp, err := http.Post(base+"/hooks/shop", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("request %d past the bound: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "10" {
			t.Errorf("request %d past the bound: %d, Retry-After %q; want 503, 10", i, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	}
	if metrics := get(t, base+"/metrics"); !strings.Contains(metrics, "hookverify_edge_bytes_in_flight_refusals_total 3") {
		t.Errorf("/metrics does not count 3 refusals:\n%s", metrics)
	}
	line := logLine(t, edge.log, "holding the bound of request bytes at once; asking the provider to retry")
	if line["max_bytes_in_flight"] != float64(1<<20) {
		t.Errorf("refusal log line %v", line)
	}
	if n := strings.Count(edge.log.String(), "holding the bound of request bytes at once"); n != 1 {
		t.Errorf("%d refusal log lines for 3 refusals within the interval, want 1", n)
	}
	v.finish()
	if err := <-first; err != nil {
		t.Errorf("the request within the bound: %v", err)
	}
}

func TestEdgeRefusesANegativeMaxBytesInFlight(t *testing.T) {
	err := runEdge(context.Background(), env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}, []string{"--max-bytes-in-flight", "-1"})
	if err == nil || !strings.Contains(err.Error(), "--max-bytes-in-flight") {
		t.Errorf("--max-bytes-in-flight -1: %v, want a usage error naming it", err)
	}
}
