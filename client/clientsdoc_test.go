package client_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestClientsDocTellsHowToReadRetryInfo: docs/clients.md has clients in other languages retry
// RESOURCE_EXHAUSTED only with a google.rpc.RetryInfo detail and take Retry-After from it, and
// said no dependency beyond the hookverify protos and the well-known types was needed. The
// detail comes as a google.rpc.Status in the grpc-status-details-bin trailer, whose messages
// (google/rpc/status.proto, error_details.proto) no protobuf runtime ships: a client that
// follows the doc as written cannot tell backpressure from a message over the receive limit.
// The doc must name the trailer and, for each language it covers, what decodes it; the
// trailer is checked on the wire here, read with nothing but those two messages.
func TestClientsDocTellsHowToReadRetryInfo(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	for _, want := range []string{
		"grpc-status-details-bin",
		"grpcio-status", "googleapis-common-protos", // Python
		"StatusProto.fromThrowable", // Java (grpc-protobuf)
		"tonic-types",               // Rust
	} {
		if !strings.Contains(text, want) {
			t.Errorf("docs/clients.md does not mention %q", want)
		}
	}

	const hint = 30 * time.Second
	addr, _ := pushbackServer(t, codes.ResourceExhausted, hint, 1)
	conn := dial(t, addr, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	var trailer metadata.MD
	_, err = conn.Verifier.Verify(context.Background(), &hookverifyv1.VerifyRequest{EndpointId: "e"}, grpc.Trailer(&trailer))
	if err == nil {
		t.Fatal("no error")
	}
	raw := trailer.Get("grpc-status-details-bin")
	if len(raw) != 1 {
		t.Fatalf("trailer grpc-status-details-bin: %d values", len(raw))
	}
	var st spb.Status
	if err := proto.Unmarshal([]byte(raw[0]), &st); err != nil {
		t.Fatal(err)
	}
	var info errdetails.RetryInfo
	if len(st.GetDetails()) != 1 || st.GetDetails()[0].UnmarshalTo(&info) != nil || info.GetRetryDelay().AsDuration() != hint {
		t.Errorf("status in the trailer: %v", &st)
	}
}

// TestClientsDocSaysWhatAStoppingServerAnswers: docs/clients.md gave CANCELLED as what "a
// server stopping cuts its last calls off" with. hookverify serve drains with GracefulStop and
// then cuts the calls still running with Stop (internal/cli/serve.go), and their callers get
// UNAVAILABLE, as the README says: the doc must not send readers looking for CANCELLED there.
func TestClientsDocSaysWhatAStoppingServerAnswers(t *testing.T) {
	t.Parallel()
	f := newFakeServer()
	entered := make(chan struct{}, 1)
	f.respond = func(ctx context.Context, _ *hookverifyv1.VerifyRequest) (*hookverifyv1.VerifyResponse, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}
	g := grpc.NewServer()
	hookverifyv1.RegisterVerifierServiceServer(g, f)
	conn := dial(t, serveGRPC(t, g), client.WithRetry(client.RetryPolicy{MaxAttempts: 1}), client.WithoutHealthGate())
	go func() {
		<-entered
		go g.GracefulStop()
		time.Sleep(100 * time.Millisecond) // the drain bound, shortened
		g.Stop()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := conn.Verifier.Verify(ctx, &hookverifyv1.VerifyRequest{EndpointId: "e"})
	if got := status.Code(err); got != codes.Unavailable {
		t.Fatalf("a call cut off by a stopping server: %v, want UNAVAILABLE", err)
	}
	doc, err := os.ReadFile("../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(strings.Fields(string(doc)), " "), "a server stopping cuts its last calls off so") {
		t.Error("docs/clients.md says a stopping server cuts its last calls off with CANCELLED")
	}
}
