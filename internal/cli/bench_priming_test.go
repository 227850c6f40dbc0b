package cli

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// fakeBenchServer answers the calls `hookverify bench` makes: it creates the endpoint and
// adds its secret, and answers every Verify with verdict (and reason).
type fakeBenchServer struct {
	hookverifyv1.UnimplementedAdminServiceServer
	hookverifyv1.UnimplementedVerifierServiceServer
	hookverifyv1.UnimplementedInboxServiceServer
	verdict  hookverifyv1.Verdict
	reason   hookverifyv1.RejectReason
	verifies atomic.Int64
}

func (f *fakeBenchServer) CreateEndpoint(_ context.Context, req *hookverifyv1.CreateEndpointRequest) (*hookverifyv1.CreateEndpointResponse, error) {
	return &hookverifyv1.CreateEndpointResponse{Endpoint: req.GetEndpoint()}, nil
}

func (f *fakeBenchServer) AddSecret(context.Context, *hookverifyv1.AddSecretRequest) (*hookverifyv1.AddSecretResponse, error) {
	return &hookverifyv1.AddSecretResponse{}, nil
}

func (f *fakeBenchServer) Verify(context.Context, *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
	f.verifies.Add(1)
	resp := &hookverifyv1.VerifyResponse{Verdict: f.verdict}
	if f.verdict == hookverifyv1.Verdict_VERDICT_REJECTED {
		resp.RejectReason, resp.Detail = f.reason, "no secret of this endpoint matches the signature"
	}
	return resp, nil
}

func (f *fakeBenchServer) GetInboxStats(context.Context, *hookverifyv1.GetInboxStatsRequest) (*hookverifyv1.GetInboxStatsResponse, error) {
	return &hookverifyv1.GetInboxStatsResponse{}, nil
}

// startFakeBenchServer serves f on a loopback port and returns the bench's --server flags.
func startFakeBenchServer(t *testing.T, f *fakeBenchServer) []string {
	t.Helper()
	return serveFakeBench(t, f, f)
}

// serveFakeBench serves f, with v answering Verify, on a loopback port and returns the
// bench's --server flags.
func serveFakeBench(t *testing.T, f *fakeBenchServer, v hookverifyv1.VerifierServiceServer) []string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hookverifyv1.RegisterAdminServiceServer(srv, f)
	hookverifyv1.RegisterVerifierServiceServer(srv, v)
	hookverifyv1.RegisterInboxServiceServer(srv, f)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return []string{"--server", lis.Addr().String()}
}

// TestBenchPrimingChecksTheVerdicts: the 64 events primed before the clock starts are the
// phase's redeliveries, and the priming took any answer of the server as success. A server
// that rejected them (or answered DUPLICATE) ran the whole bench, its "dup" share then
// measuring rejections (or whatever the server did), with exit 0 and nothing said. The bench
// now stops at the first primed event not ACCEPTED, saying what the server answered.
func TestBenchPrimingChecksTheVerdicts(t *testing.T) {
	for _, tc := range []struct {
		verdict hookverifyv1.Verdict
		reason  hookverifyv1.RejectReason
		want    []string
	}{
		{hookverifyv1.Verdict_VERDICT_REJECTED, hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH, []string{"priming", "REJECTED", "SIGNATURE_MISMATCH", "no secret of this endpoint matches"}},
		{hookverifyv1.Verdict_VERDICT_DUPLICATE, 0, []string{"priming", "DUPLICATE"}},
	} {
		f := &fakeBenchServer{verdict: tc.verdict, reason: tc.reason}
		remote := startFakeBenchServer(t, f)
		code, out, errOut := run(t, "", append([]string{"bench", "--duration", "200ms", "--workers", "1", "--mix", "dup=100"}, remote...)...)
		if code == 0 {
			t.Errorf("priming answered %v: bench exited 0:\n%s", tc.verdict, out)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("priming answered %v: the error does not say %q:\n%s", tc.verdict, w, errOut)
			}
		}
		if n := f.verifies.Load(); n != 1 {
			t.Errorf("priming answered %v: %d Verify calls, want the bench to stop at the first", tc.verdict, n)
		}
	}
	// A server that accepts them runs the bench.
	f := &fakeBenchServer{verdict: hookverifyv1.Verdict_VERDICT_ACCEPTED}
	if code, out, errOut := run(t, "", append([]string{"bench", "--duration", "100ms", "--workers", "1", "--mix", "dup=100"}, startFakeBenchServer(t, f)...)...); code != 0 || !hasRow(out, "accepted") {
		t.Errorf("priming accepted: exit %d (%s):\n%s", code, errOut, out)
	}
}
