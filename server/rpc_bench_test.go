package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/server/protocol"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// BenchmarkVerifyRPC measures whole gRPC calls over loopback TCP, client and server in this
// process, on the embedded store: the no-op Health/Check, a redelivery the server remembers
// (answered without the store), a forged delivery and a new event. Compare the ns/op of a
// row with noop's, as `hookverify bench --baseline` does with a running server; this one
// needs no server and is steadier, so it suits before/after comparisons of the server's own
// per-call costs (`-count 10`, then benchstat).
func BenchmarkVerifyRPC(b *testing.B) {
	ctx := b.Context()
	st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	_, kr := mustKeyring(b)
	srv, err := server.New(server.Options{Keyring: kr, Protocols: protocol.Default(),
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	srv.SetStore(st)
	g := srv.NewGRPCServer()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = g.Serve(lis) }()
	b.Cleanup(g.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	verifier, health := hookverifyv1.NewVerifierServiceClient(conn), healthpb.NewHealthClient(conn)
	admin := hookverifyv1.NewAdminServiceClient(conn)

	gh, _ := protocol.Default().Lookup("github")
	secret, verifying, err := gh.ExampleSecret()
	if err != nil {
		b.Fatal(err)
	}
	if _, err := admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: "bench", Provider: "github"}}); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: "bench", Secret: verifying}); err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"bench":"` + strings.Repeat("x", 2048-13) + `"}`)
	request := func(eventID, key string) *hookverifyv1.VerifyRequest {
		signed, err := protocol.SignDelivery(gh, protocol.SignInput{Body: body, EventID: eventID, Timestamp: time.Now()}, []string{key})
		if err != nil {
			b.Fatal(err)
		}
		req := &hookverifyv1.VerifyRequest{EndpointId: "bench", Body: body, Method: "POST", Url: "https://bench.example.com/bench"}
		for _, h := range signed.Headers {
			req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
		}
		return req
	}
	redelivery := request("primed", secret)
	expect := func(req *hookverifyv1.VerifyRequest, want hookverifyv1.Verdict) func(context.Context) error {
		return func(ctx context.Context) error {
			resp, err := verifier.Verify(ctx, req)
			if err == nil && resp.GetVerdict() != want {
				b.Fatalf("verdict %v, want %v", resp.GetVerdict(), want)
			}
			return err
		}
	}
	if err := expect(redelivery, hookverifyv1.Verdict_VERDICT_ACCEPTED)(ctx); err != nil {
		b.Fatal(err)
	}
	// Each case returns the call to make b.N times; new events are signed before the clock
	// runs, since signing is the provider's work, not the server's.
	var next atomic.Int64
	for _, c := range []struct {
		name    string
		prepare func(n int) func(context.Context) error
	}{
		{"noop", func(int) func(context.Context) error {
			return func(ctx context.Context) error {
				_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
				return err
			}
		}},
		{"duplicate", func(int) func(context.Context) error {
			return expect(redelivery, hookverifyv1.Verdict_VERDICT_DUPLICATE)
		}},
		{"forged", func(int) func(context.Context) error {
			return expect(request("forged", "not-the-secret"), hookverifyv1.Verdict_VERDICT_REJECTED)
		}},
		{"accepted", func(n int) func(context.Context) error {
			reqs := make([]*hookverifyv1.VerifyRequest, n)
			for i := range reqs {
				reqs[i] = request("new-"+strconv.FormatInt(next.Add(1), 10), secret)
			}
			var i atomic.Int64
			return func(ctx context.Context) error {
				return expect(reqs[i.Add(1)-1], hookverifyv1.Verdict_VERDICT_ACCEPTED)(ctx)
			}
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			call := c.prepare(b.N)
			b.SetParallelism(16) // 32 callers on two cores, as scripts/bench.sh runs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := call(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
