package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/hookverify/hookverify/client"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// runBench drives a running server with concurrent workers over a mix of new events,
// redeliveries and forged deliveries, and reports throughput and latency per verdict. With
// --baseline it first measures a no-op gRPC call (grpc.health.v1.Health/Check) on the same
// server with the same concurrency, so results read as a ratio of what gRPC alone allows.
func runBench(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench")
	server := fs.String("server", "127.0.0.1:7700", "address of the hookverify server")
	workers := fs.Int("workers", 32, "concurrent callers")
	duration := fs.Duration("duration", 10*time.Second, "how long each phase runs")
	mix := fs.String("mix", "new=80,dup=15,forged=5", "share of new events, redeliveries and forged deliveries")
	bodyBytes := fs.Int("body-bytes", 2048, "size of each delivery body")
	baseline := fs.Bool("baseline", false, "also measure a no-op gRPC call (Health/Check) for comparison")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	weights, err := parseMix(*mix)
	if err != nil {
		return err
	}
	if *workers < 1 || *bodyBytes < 16 {
		return errors.New("--workers must be at least 1 and --body-bytes at least 16")
	}
	conn, err := client.Dial(*server, client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
	if err != nil {
		return err
	}
	defer conn.Close()

	// A fresh endpoint per run, so every "new" event really is new.
	var suffix [6]byte
	rand.Read(suffix[:])
	endpointID := "bench-" + hex.EncodeToString(suffix[:])
	gh, _ := protocol.Default().Lookup("github")
	secret, verifying, err := gh.ExampleSecret()
	if err != nil {
		return err
	}
	if _, err := conn.Admin.CreateEndpoint(ctx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: endpointID, Provider: "github"}}); err != nil {
		return fmt.Errorf("creating the bench endpoint: %w", err)
	}
	if _, err := conn.Admin.AddSecret(ctx, &hookverifyv1.AddSecretRequest{EndpointId: endpointID, Secret: verifying}); err != nil {
		return fmt.Errorf("adding its secret: %w", err)
	}
	body := []byte(`{"bench":"` + strings.Repeat("x", *bodyBytes-13) + `"}`)
	request := func(eventID, key string) *hookverifyv1.VerifyRequest {
		signed, _ := protocol.SignDelivery(gh, protocol.SignInput{Body: body, EventID: eventID, Timestamp: time.Now()}, []string{key})
		req := &hookverifyv1.VerifyRequest{EndpointId: endpointID, Body: body, Method: "POST", Url: "https://bench.example.com/" + endpointID}
		for _, h := range signed.Headers {
			req.Headers = append(req.Headers, &hookverifyv1.HeaderField{Name: h.Name, Value: h.Value})
		}
		return req
	}
	// Redeliveries need events that exist: prime a few before the clock starts.
	primed := make([]*hookverifyv1.VerifyRequest, 64)
	for i := range primed {
		primed[i] = request(fmt.Sprintf("prime-%d", i), secret)
		if _, err := conn.Verifier.Verify(ctx, primed[i]); err != nil {
			return fmt.Errorf("priming: %w", err)
		}
	}
	forged := request("forged", "not-the-secret")

	out := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(e.stdout, "hookverify bench: %s, %d workers, %s per phase, %d-byte bodies, mix %s\n\n", *server, *workers, *duration, *bodyBytes, *mix)
	fmt.Fprintln(out, "phase\tcalls\tcalls/s\tp50\tp90\tp99\terrors\t")
	var baseRate float64
	if *baseline {
		health := healthpb.NewHealthClient(conn.GRPC())
		res := drive(ctx, *workers, *duration, func(ctx context.Context, _ *mrand.Rand, _ int64) (string, error) {
			_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
			return "noop", err
		})
		baseRate = res.print(out)
	}
	var seq sync.Mutex
	next := int64(0)
	res := drive(ctx, *workers, *duration, func(ctx context.Context, r *mrand.Rand, _ int64) (string, error) {
		var req *hookverifyv1.VerifyRequest
		switch pick := r.IntN(weights[0] + weights[1] + weights[2]); {
		case pick < weights[0]:
			seq.Lock()
			next++
			n := next
			seq.Unlock()
			req = request("evt-"+strconv.FormatInt(n, 10), secret)
		case pick < weights[0]+weights[1]:
			req = primed[r.IntN(len(primed))]
		default:
			req = forged
		}
		resp, err := conn.Verifier.Verify(ctx, req)
		if err != nil {
			return "error:" + status.Code(err).String(), err
		}
		return strings.ToLower(strings.TrimPrefix(resp.GetVerdict().String(), "VERDICT_")), nil
	})
	res.print(out)
	out.Flush()
	if *baseline && baseRate > 0 {
		fmt.Fprintln(e.stdout, "\nratio to the no-op gRPC baseline (calls/s):")
		for _, v := range res.verdicts() {
			fmt.Fprintf(e.stdout, "  %-10s %.2fx\n", v, res.rate(v)/baseRate)
		}
		fmt.Fprintf(e.stdout, "  %-10s %.2fx\n", "all", res.rate("")/baseRate)
	}
	return nil
}

func parseMix(s string) ([3]int, error) {
	var w [3]int
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(value)
		if !ok || err != nil || n < 0 {
			return w, fmt.Errorf("--mix %q: want name=weight pairs of new, dup and forged", s)
		}
		switch name {
		case "new":
			w[0] = n
		case "dup":
			w[1] = n
		case "forged":
			w[2] = n
		default:
			return w, fmt.Errorf("--mix: unknown kind %q (new, dup, forged)", name)
		}
	}
	if w[0]+w[1]+w[2] == 0 {
		return w, errors.New("--mix: weights add up to zero")
	}
	return w, nil
}

// benchResult holds every call's outcome and latency, by outcome.
type benchResult struct {
	elapsed   time.Duration
	latencies map[string][]time.Duration
	errors    int
}

// drive runs call from workers goroutines for d and collects latencies by the label call returns.
func drive(ctx context.Context, workers int, d time.Duration, call func(context.Context, *mrand.Rand, int64) (string, error)) *benchResult {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var mu sync.Mutex
	res := &benchResult{latencies: map[string][]time.Duration{}}
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := mrand.New(mrand.NewPCG(uint64(w), uint64(start.UnixNano())))
			local := map[string][]time.Duration{}
			errs := 0
			for i := int64(0); ctx.Err() == nil; i++ {
				t0 := time.Now()
				label, err := call(ctx, r, i)
				if ctx.Err() != nil || time.Now().After(end) {
					break // a call cut short by the end of the phase is not counted
				}
				if err != nil {
					errs++
				}
				local[label] = append(local[label], time.Since(t0))
			}
			mu.Lock()
			for k, v := range local {
				res.latencies[k] = append(res.latencies[k], v...)
			}
			res.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	return res
}

func (r *benchResult) verdicts() []string {
	var out []string
	for k := range r.latencies {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// rate is the calls per second of one label, or of all calls for "".
func (r *benchResult) rate(label string) float64 {
	n := 0
	for k, v := range r.latencies {
		if label == "" || k == label {
			n += len(v)
		}
	}
	return float64(n) / r.elapsed.Seconds()
}

// print writes one row per label and returns the overall rate.
func (r *benchResult) print(w *tabwriter.Writer) float64 {
	for _, label := range r.verdicts() {
		lat := r.latencies[label]
		slices.Sort(lat)
		errs := 0
		if strings.HasPrefix(label, "error:") {
			errs = len(lat)
		}
		fmt.Fprintf(w, "%s\t%d\t%.0f\t%s\t%s\t%s\t%d\t\n", label, len(lat), r.rate(label), pct(lat, 50), pct(lat, 90), pct(lat, 99), errs)
	}
	return r.rate("")
}

func pct(sorted []time.Duration, p float64) string {
	if len(sorted) == 0 {
		return "-"
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(i, 0)].Round(10 * time.Microsecond).String()
}
