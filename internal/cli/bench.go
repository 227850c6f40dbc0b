package cli

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/benchbody"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// runBench drives a running server with concurrent workers over a mix of new events,
// redeliveries and forged deliveries, and reports throughput and latency per verdict. With
// --baseline it first measures a no-op gRPC call (grpc.health.v1.Health/Check) on the same
// server with the same concurrency, so results read as a ratio of what gRPC alone allows.
func runBench(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "bench")
	var remote remoteFlags
	remote.register(fs)
	workers := fs.Int("workers", 32, "concurrent callers")
	duration := fs.Duration("duration", 10*time.Second, "how long each phase runs")
	mix := fs.String("mix", "new=80,dup=15,forged=5", "share of new events, redeliveries and forged deliveries")
	bodyBytes := fs.Int("body-bytes", 2048, "size of each delivery body")
	repetitiveBody := fs.Bool("repetitive-body", false, `bodies of one repeated letter, as before the eighth session, instead of text that compresses about as much as real payloads (PostgreSQL compresses each stored body: a repeated letter about 40 times, a real payload 1.5 times)`)
	sequentialIDs := fs.Bool("sequential-event-ids", false, `new events numbered evt-1, evt-2, ..., as before the eleventh session, instead of random ids like GitHub's delivery GUIDs (sequential ids land side by side in the claims index, which real, random ones do not)`)
	baseline := fs.Bool("baseline", false, "also measure a no-op gRPC call (Health/Check) for comparison")
	drain := fs.Int("drain", 0, "also run this many workers during the phase that lease the bench's deliveries and ack them, as workers do, and report how fast they drain the inbox (needs the inbox scope)")
	ackEach := fs.Bool("ack-each", false, "--drain workers ack each delivery with its own Ack call, rather than each lease's deliveries with one AckMany")
	leaseSize := fs.Int("lease-size", 10, "deliveries each --drain worker leases at a time (1 to 100)")
	rate := fs.Float64("rate", 0, "open loop: start this many calls per second on a fixed schedule, whatever the answers' latency (0: closed loop, each worker calls again as soon as answered); latency then counts from the scheduled start, so queueing shows")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	weights, err := parseMix(*mix)
	if err != nil {
		return err
	}
	// A rate is 0 (closed loop) or one whose interval between calls is from 1 µs to 100 s:
	// NaN ran a closed loop unannounced, and rates whose interval overflowed a Duration or
	// rounded to zero started calls without end.
	rateOK := *rate == 0 || *rate >= minBenchRate && *rate <= maxBenchRate
	// A phase of no time ran no call and printed an empty table, after creating and priming
	// an endpoint on the server.
	if *duration <= 0 {
		return usagef("--duration %v: want a positive duration, e.g. 10s", *duration)
	}
	if *workers < 1 || *bodyBytes < 16 || *bodyBytes > client.MaxBodyCeiling || !rateOK || *drain < 0 || *leaseSize < 1 || *leaseSize > 100 {
		return usagef("--workers must be at least 1, --body-bytes from 16 to %d, --rate 0 or from %g to %g, --drain not negative and --lease-size from 1 to 100", client.MaxBodyCeiling, minBenchRate, maxBenchRate)
	}
	// --timeout, every client command's deadline for its call, is each measured call's too.
	load := loadShape{workers: *workers, duration: *duration, rate: *rate, callTimeout: remote.timeout}
	// The token needs the admin scope (the bench creates its own endpoint) and verify on it.
	conn, err := remote.dial(client.WithRetry(client.RetryPolicy{MaxAttempts: 1}))
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
	setupCtx, cancel := context.WithTimeout(ctx, remote.timeout)
	defer cancel()
	if _, err := conn.Admin.CreateEndpoint(setupCtx, &hookverifyv1.CreateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: endpointID, Provider: "github",
		// Room for the bodies asked for: the default limit (1 MiB) would reject every larger one.
		MaxBodyBytes: max(int64(*bodyBytes), 1<<20)}}); err != nil {
		return fmt.Errorf("creating the bench endpoint: %w", err)
	}
	if _, err := conn.Admin.AddSecret(setupCtx, &hookverifyv1.AddSecretRequest{EndpointId: endpointID, Secret: verifying}); err != nil {
		return fmt.Errorf("adding its secret: %w", err)
	}
	body := benchbody.JSON(*bodyBytes, *repetitiveBody)
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
		resp, err := conn.Verifier.Verify(setupCtx, primed[i])
		if err != nil {
			return fmt.Errorf("priming: %w", err)
		}
		// The primed events are the phase's redeliveries: if the server did not accept them,
		// its "dup" rows would measure rejections (or whatever it did) under another name.
		if v := resp.GetVerdict(); v != hookverifyv1.Verdict_VERDICT_ACCEPTED {
			what := v.String()
			if v == hookverifyv1.Verdict_VERDICT_REJECTED {
				what += " (" + resp.GetRejectReason().String() + ": " + resp.GetDetail() + ")"
			}
			return fmt.Errorf("priming: the server answered %s to the bench's own signed delivery of new event %q on its new endpoint %s, want VERDICT_ACCEPTED: its figures would not be of the calls they name", what, fmt.Sprintf("prime-%d", i), endpointID)
		}
	}
	forged := request("forged", "not-the-secret")
	newEvent, err := newEventFrom(request(benchTemplateEventID, secret))
	if err != nil {
		return err
	}

	out := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	bodyKind := "text"
	if *repetitiveBody {
		bodyKind = "one repeated letter"
	}
	fmt.Fprintf(e.stdout, "hookverify bench: %s, %d workers, %s per phase, %d-byte bodies (%s), mix %s", remote.server, *workers, *duration, *bodyBytes, bodyKind, *mix)
	if *rate > 0 {
		// As given: rates below 1 are allowed, and %.0f printed 0.25 as 0, the closed loop's.
		fmt.Fprintf(e.stdout, ", open loop at %s calls/s", strconv.FormatFloat(*rate, 'f', -1, 64))
	}
	fmt.Fprint(e.stdout, "\n\n")
	fmt.Fprintln(out, "phase\tcalls\tcalls/s\tp50\tp90\tp99\terrors\t")
	var baseRate float64
	var base *benchResult
	if *baseline {
		health := healthpb.NewHealthClient(conn.GRPC())
		base = drive(ctx, load, func(ctx context.Context, _ int, _ *mrand.Rand) (string, int, error) {
			_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
			return "noop", 0, err
		})
		baseRate = base.print(out)
	}
	var seq sync.Mutex
	next := int64(0)
	produce := func(ctx context.Context, _ int, r *mrand.Rand) (string, int, error) {
		var req *hookverifyv1.VerifyRequest
		switch pick := r.IntN(weights[0] + weights[1] + weights[2]); {
		case pick < weights[0]:
			if !*sequentialIDs {
				req = newEvent(randomEventID(r))
				break
			}
			seq.Lock()
			next++
			n := next
			seq.Unlock()
			req = newEvent("evt-" + strconv.FormatInt(n, 10))
		case pick < weights[0]+weights[1]:
			req = primed[r.IntN(len(primed))]
		default:
			req = forged
		}
		resp, err := conn.Verifier.Verify(ctx, req)
		if err != nil {
			return "error:" + status.Code(err).String(), 0, err
		}
		return strings.ToLower(strings.TrimPrefix(resp.GetVerdict().String(), "VERDICT_")), 0, nil
	}
	inbox := hookverifyv1.NewInboxServiceClient(conn.GRPC())
	var res, drained *benchResult
	var phase sync.WaitGroup
	phase.Go(func() { res = drive(ctx, load, produce) })
	var drainers *benchDrainer
	if *drain > 0 {
		drainers = newDrainer(inbox, endpointID, *drain, *leaseSize, *ackEach)
		phase.Go(func() {
			drained = drive(ctx, loadShape{workers: *drain, duration: load.duration, callTimeout: load.callTimeout}, drainers.call)
		})
	}
	phase.Wait()
	givenBack, givenBackErr := 0, error(nil)
	if drainers != nil {
		// Before the backlog is read: what the drain workers held unacked is pending again.
		// Even after Ctrl-C, which is when they most likely hold some.
		givenBack, givenBackErr = drainers.giveBack(context.WithoutCancel(ctx), remote.timeout)
	}
	res.print(out)
	if drained != nil {
		drained.print(out)
	}
	out.Flush()
	if base != nil {
		base.printBehind(e.stdout, "noop")
	}
	res.printBehind(e.stdout, "verify")
	if drained != nil {
		fmt.Fprintf(e.stdout, "\ndrained: %d deliveries acked, %.0f/s\n", drained.items, float64(drained.items)/drained.elapsed.Seconds())
		// The drain workers' calls under way at the end are answered after it (a closed loop):
		// their acks are not the phase's rate, but those deliveries left the inbox all the same.
		if drained.lateItems > 0 {
			fmt.Fprintf(e.stdout, "drained after the phase's end: %d more acked by calls answered after it, in neither the line above nor the backlog below\n", drained.lateItems)
		}
		if givenBack > 0 {
			fmt.Fprintf(e.stdout, "given back: %d deliveries the drain workers had leased and not acked at the end, pending again (nacked without counting an attempt)\n", givenBack)
		}
		if givenBackErr != nil {
			fmt.Fprintf(e.stdout, "given back: not every delivery the drain workers held at the end (%v): those stay leased until their visibility timeout (a minute), counted as leased below\n", status.Convert(givenBackErr).Message())
		}
	}
	if *baseline && *rate > 0 {
		// Both ran on the same schedule: each answered at most the rate, so the ratio of their
		// calls/s says nothing of the server's cost (1.00x whenever both keep up).
		fmt.Fprintln(e.stdout, "\nopen loop: the no-op ran on the same schedule; compare latencies, not calls/s")
	} else if *baseline && baseRate > 0 {
		fmt.Fprintln(e.stdout, "\nratio to the no-op gRPC baseline (calls/s):")
		for _, v := range res.verdicts() {
			if isErrorLabel(v) {
				continue // failed calls are not throughput
			}
			fmt.Fprintf(e.stdout, "  %-10s %.2fx\n", v, res.rate(v)/baseRate)
		}
		fmt.Fprintf(e.stdout, "  %-10s %.2fx\n", "all", res.rate("")/baseRate)
	}
	printBacklog(ctx, e, inbox, endpointID, remote.timeout)
	return nil
}

// benchTemplateEventID is the event id newEventFrom replaces.
const benchTemplateEventID = "bench-template-event"

// newEventFrom returns a maker of new events from one signed with benchTemplateEventID: each
// is that delivery with its id in place of the template's. GitHub signs the body alone, so one
// signature serves every event, and signing, which is the provider's work and not the
// server's, stays out of the measured calls: it cost the load generator, on the same two
// cores, about 7 µs and 21 allocations a call, which the no-op baseline never paid.
func newEventFrom(template *hookverifyv1.VerifyRequest) (func(eventID string) *hookverifyv1.VerifyRequest, error) {
	at := -1
	for i, h := range template.GetHeaders() {
		if h.GetValue() == benchTemplateEventID {
			if at >= 0 {
				return nil, errors.New("bench: two headers carry the template event id")
			}
			at = i
		}
	}
	if at < 0 {
		return nil, errors.New("bench: no header carries the template event id")
	}
	name := template.Headers[at].GetName()
	return func(eventID string) *hookverifyv1.VerifyRequest {
		req := &hookverifyv1.VerifyRequest{EndpointId: template.GetEndpointId(), Body: template.GetBody(),
			Method: template.GetMethod(), Url: template.GetUrl(), Headers: slices.Clone(template.GetHeaders())}
		// The other header records are shared: requests are only read, by their marshaling.
		req.Headers[at] = &hookverifyv1.HeaderField{Name: name, Value: eventID}
		return req
	}, nil
}

// randomEventID returns a new event id shaped like GitHub's X-GitHub-Delivery, a random GUID.
// Real event ids are random, so each new claim goes to its own place in the claims index;
// numbered ones would all land on its last page, which flattered the store (BENCHMARKS.md,
// eleventh session). The worker's own generator keeps the ids unique within a run (128 bits
// from a stream seeded per worker and run) and cheap to make.
func randomEventID(r *mrand.Rand) string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], r.Uint64())
	binary.LittleEndian.PutUint64(b[8:], r.Uint64())
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}

// drainer returns the call of `workers` drain workers: each leases up to leaseSize of the
// endpoint's deliveries ("lease"; "lease (empty)" when there was none, after which it waits
// 10 ms as a polling worker would, a pause not counted as a call) and then acks them all with
// one AckMany call ("ack-many"), or with ackEach one Ack call each ("ack"). Either way each call reports how many deliveries
// it acked, and their rate in the result's items is the rate the inbox drains. What the
// workers hold leased and unacked when the phase ends is given back by benchDrainer.giveBack.
func drainer(inbox hookverifyv1.InboxServiceClient, endpointID string, workers, leaseSize int, ackEach bool) func(context.Context, int, *mrand.Rand) (string, int, error) {
	return newDrainer(inbox, endpointID, workers, leaseSize, ackEach).call
}

// benchDrainer is drainer's state: the deliveries each worker holds leased and not yet acked.
type benchDrainer struct {
	call   func(context.Context, int, *mrand.Rand) (string, int, error)
	inbox  hookverifyv1.InboxServiceClient
	leased [][]*hookverifyv1.InboxDelivery // each worker's own
}

// giveBack nacks, to be leasable again at once and without counting an attempt, every
// delivery the workers leased and had not acked when the phase ended (a lease answered just
// before the end, or after it): left leased, they were held by nobody for the visibility
// timeout (a minute), neither drained nor pending, and the backlog line showed them leased as
// if a worker were at them. It returns how many it gave back, and the first error. Call it
// once drive has returned.
func (d *benchDrainer) giveBack(ctx context.Context, timeout time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	given, first := 0, error(nil)
	for w, held := range d.leased {
		d.leased[w] = nil
		wg.Go(func() {
			for _, del := range held {
				_, err := d.inbox.Nack(ctx, &hookverifyv1.NackRequest{InboxId: del.GetInboxId(), LeaseToken: del.GetLeaseToken(),
					RetryAfter: durationpb.New(0), NotAttempted: true, Error: "hookverify bench: phase ended before the ack"})
				mu.Lock()
				if err == nil {
					given++
				} else if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return given, first
}

func newDrainer(inbox hookverifyv1.InboxServiceClient, endpointID string, workers, leaseSize int, ackEach bool) *benchDrainer {
	d := &benchDrainer{inbox: inbox, leased: make([][]*hookverifyv1.InboxDelivery, workers)}
	leased := d.leased
	idle := make([]bool, workers) // each worker's last lease was empty
	d.call = func(ctx context.Context, w int, _ *mrand.Rand) (string, int, error) {
		if idle[w] {
			// The pause after an empty lease is the bench's own, not the server's: a call of
			// its own that drive does not count, so that the "lease (empty)" row times the
			// lease alone.
			idle[w] = false
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
			return "", 0, nil
		}
		if len(leased[w]) == 0 {
			resp, err := inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: []string{endpointID},
				MaxDeliveries: int32(leaseSize), VisibilityTimeout: durationpb.New(time.Minute)})
			if err != nil {
				return "error:lease:" + status.Code(err).String(), 0, err
			}
			if leased[w] = resp.GetDeliveries(); len(leased[w]) == 0 {
				idle[w] = true
				return "lease (empty)", 0, nil
			}
			return "lease", 0, nil
		}
		if ackEach {
			d := leased[w][0]
			leased[w] = leased[w][1:]
			if _, err := inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
				return "error:ack:" + status.Code(err).String(), 0, err
			}
			return "ack", 1, nil
		}
		req := &hookverifyv1.AckManyRequest{Acks: make([]*hookverifyv1.AckRequest, len(leased[w]))}
		for i, d := range leased[w] {
			req.Acks[i] = &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}
		}
		leased[w] = nil
		resp, err := inbox.AckMany(ctx, req)
		if err != nil {
			return "error:ack-many:" + status.Code(err).String(), 0, err
		}
		acked, failed := 0, error(nil)
		label := "ack-many"
		for _, r := range resp.GetResults() {
			if code := codes.Code(r.GetCode()); code != codes.OK {
				label, failed = "error:ack-many:"+code.String(), errors.New(r.GetMessage())
				continue
			}
			acked++
		}
		return label, acked, failed
	}
	return d
}

// printBacklog prints what the phase left in the bench endpoint's inbox: the deliveries
// accepted but not yet acked, and how long the oldest has waited.
func printBacklog(ctx context.Context, e env, inbox hookverifyv1.InboxServiceClient, endpointID string, timeout time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := inbox.GetInboxStats(ctx, &hookverifyv1.GetInboxStatsRequest{})
	if err != nil {
		fmt.Fprintf(e.stdout, "\ninbox after the phase: unknown (%v)\n", status.Convert(err).Message())
		return
	}
	for _, s := range resp.GetEndpoints() {
		if s.GetEndpointId() == endpointID {
			fmt.Fprintf(e.stdout, "\ninbox after the phase: %d pending (the oldest for %s), %d leased\n",
				s.GetPending(), s.GetOldestPendingAge().AsDuration().Round(time.Millisecond), s.GetLeased())
			return
		}
	}
	fmt.Fprintln(e.stdout, "\ninbox after the phase: empty")
}

// maxMixWeight bounds each weight of --mix, so that their sum, the range the workers draw
// from, cannot overflow (it panicked rand.IntN, after the bench had created its endpoint).
const maxMixWeight = 1_000_000

func parseMix(s string) ([3]int, error) {
	var w [3]int
	var seen [3]bool
	for _, part := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		n, err := strconv.Atoi(value)
		if !ok || err != nil || n < 0 || n > maxMixWeight {
			return w, usagef("--mix %q: want name=weight pairs of new, dup and forged, each weight from 0 to %d", s, maxMixWeight)
		}
		i := slices.Index([]string{"new", "dup", "forged"}, name)
		if i < 0 {
			return w, usagef("--mix: unknown kind %q (new, dup, forged)", name)
		}
		// A kind named twice is a typo, not a sum: the last weight would silently win while
		// the results' header prints the mix as given.
		if seen[i] {
			return w, usagef("--mix %q: %s given twice", s, name)
		}
		seen[i], w[i] = true, n
	}
	if w[0]+w[1]+w[2] == 0 {
		return w, usagef("--mix: weights add up to zero")
	}
	return w, nil
}

// benchResult holds every call's outcome and latency, by outcome.
type benchResult struct {
	elapsed   time.Duration
	latencies map[string][]time.Duration
	errors    int
	// items is the sum of what the calls reported doing (deliveries acked, for drain workers).
	items int
	// due is, in an open loop, how many calls the schedule set in the phase (zero in a closed
	// loop), and started how many of them a worker took up; those not among the latencies
	// were not answered by its end.
	due, started int
	// late is, in a closed loop, how many calls of each label were answered after the phase's
	// end: they count in the percentiles, not in the rate. cut is how many calls were still
	// unanswered grace after the end (or at Ctrl-C), and are in neither.
	late  map[string]int
	cut   int
	grace time.Duration
	// lateItems is, in a closed loop, the items of the calls answered after the phase's end
	// (deliveries acked then, for drain workers): done, but not in items or its rate.
	lateItems int
	// sendLate is, in an open loop, how late after its due time the schedule sent each call.
	sendLate []time.Duration
}

// loadShape is how drive calls: how many callers, for how long, and at what fixed rate (zero
// for a closed loop).
type loadShape struct {
	workers  int
	duration time.Duration
	rate     float64
	// grace is how long past the end the calls under way are waited for (0: phaseGrace).
	grace time.Duration
	// callTimeout is each call's own deadline (0: none but the phase's and its grace): a call
	// not answered within it fails, as a provider gives up on a delivery, and the worker calls
	// again, rather than being held silently to the end of the grace.
	callTimeout time.Duration
}

// The rates an open loop accepts: the interval between calls, a Duration, stays from 1 µs to
// 100 s.
const minBenchRate, maxBenchRate = 0.01, 1e6

// dueAt is when, from an open loop's start, its call k is due: k/rate seconds, computed from k
// each time, to the nearest nanosecond. Adding up an interval rounded to the nanosecond
// drifted early: at 3,000/s (an interval of 333,333 ns) a 2 s phase scheduled 6,001 calls.
// Rounded down, a rate that float64 holds only approximately (1.1/s) put the call due at the
// phase's end a nanosecond before it, in the phase: 34 calls in 30 s.
func (l loadShape) dueAt(k int64) time.Duration {
	return time.Duration(math.Round(float64(k) * float64(time.Second) / l.rate))
}

// callsDueWithin is how many of an open loop's calls are due in its first d: the calls k with
// dueAt(k) before d.
func (l loadShape) callsDueWithin(d time.Duration) int {
	k := max(int64(math.Ceil(d.Seconds()*l.rate)), 0)
	for k > 0 && l.dueAt(k-1) >= d {
		k--
	}
	for l.dueAt(k) < d {
		k++
	}
	return int(k)
}

// drive runs call from load.workers goroutines for load.duration and collects latencies by
// the label call returns (none for the label "", a pause of the caller's own). In a closed
// loop each worker calls again as soon as it is answered. At a fixed rate the calls are started
// on a schedule instead, handed to whichever worker is free, and each latency counts from the
// call's scheduled start, so that time spent waiting for a free worker (the server falling
// behind) is counted rather than hidden; calls due but not answered are counted in due and
// started (printBehind). Either way a call under way at the phase's end is answered even after
// it (up to load.grace), and its latency counted, since the calls in flight at the end are the
// slowest and leaving them out would flatter the percentiles (a stall spanning the end vanished
// altogether); those of a closed loop count in the percentiles but not in the rate, which is of
// the answers within the phase (their items, in lateItems). Calls still unanswered then are
// cut, and counted in cut. With load.callTimeout each call also has that deadline of its own,
// and one not answered within it is an error row like any failed call.
func drive(parent context.Context, load loadShape, call func(ctx context.Context, worker int, r *mrand.Rand) (label string, items int, err error)) *benchResult {
	ctx, cancel := context.WithTimeout(parent, load.duration)
	defer cancel()
	grace := load.grace
	if grace <= 0 {
		grace = phaseGrace
	}
	// callCtx is the calls': the phase's and grace longer.
	callCtx, cancelCalls := context.WithTimeout(parent, load.duration+grace)
	defer cancelCalls()
	callEnd, _ := callCtx.Deadline()
	var mu sync.Mutex
	res := &benchResult{latencies: map[string][]time.Duration{}, late: map[string]int{}, grace: grace}
	var wg sync.WaitGroup
	start := time.Now()
	end, _ := ctx.Deadline()
	var schedule chan time.Time
	if load.rate > 0 {
		schedule = make(chan time.Time, 1<<16)
		wg.Go(func() { feedNoting(ctx, schedule, start, end, load.dueAt, &res.sendLate) })
		res.due = load.callsDueWithin(end.Sub(start))
	}
	for w := range load.workers {
		wg.Go(func() {
			r := mrand.New(mrand.NewPCG(uint64(w), uint64(start.UnixNano())))
			local := map[string][]time.Duration{}
			late := map[string]int{}
			errs, items, lateItems, started, cut := 0, 0, 0, 0, 0
			for ctx.Err() == nil {
				t0 := time.Now()
				if schedule != nil {
					var ok bool
					if t0, ok = <-schedule; !ok {
						break
					}
					started++
				}
				cctx, cancelCall := callCtx, context.CancelFunc(nil)
				if load.callTimeout > 0 && time.Now().Add(load.callTimeout).Before(callEnd) {
					// Only when it ends before the grace does: a timer per call costs the load
					// generator, and a deadline past the grace's changes nothing.
					cctx, cancelCall = context.WithTimeout(callCtx, load.callTimeout)
				}
				label, n, err := call(cctx, w, r)
				if cancelCall != nil {
					cancelCall()
				}
				if callCtx.Err() != nil {
					// A call cut short by the end of the grace (or Ctrl-C) has no latency to
					// count. gRPC may fail it with DeadlineExceeded before the context reports
					// its end.
					if label != "" {
						cut++
					}
					break
				}
				// In a closed loop an answer after the end is not the phase's throughput.
				after := schedule == nil && !time.Now().Before(end)
				if label == "" {
					if after {
						break
					}
					continue // a pause of the caller's own (drainer), not a call
				}
				if err != nil {
					errs++
				}
				local[label] = append(local[label], time.Since(t0))
				if after {
					late[label]++
					lateItems += n
					break
				}
				items += n
			}
			mu.Lock()
			for k, v := range local {
				res.latencies[k] = append(res.latencies[k], v...)
			}
			for k, n := range late {
				res.late[k] += n
			}
			res.cut += cut
			res.errors += errs
			res.items += items
			res.lateItems += lateItems
			res.started += started
			mu.Unlock()
		})
	}
	wg.Wait()
	// The rate is over the phase alone, not the grace after it: in an open loop the answers
	// after the end are the phase's calls; in a closed loop they are left out of it (late).
	res.elapsed = min(time.Since(start), load.duration)
	if load.rate > 0 && errors.Is(ctx.Err(), context.Canceled) {
		// Stopped before its end (Ctrl-C): only the calls due until then were due at all, or
		// the bench would report the rest of the phase as calls the server never answered.
		res.due = load.callsDueWithin(min(res.elapsed, load.duration))
	}
	return res
}

// phaseGrace is how long past a phase's end its calls under way are waited for.
const phaseGrace = 10 * time.Second

// feed sends the scheduled start time of every call due (at start + dueAt(k), k = 0, 1, ...)
// before end, until ctx ends, then closes schedule. It wakes when the next call is due and sends
// all calls due by then. (It woke on a 1 ms ticker, which sent each call up to 1 ms late,
// however precise the timers: lateness counted in the call's latency, as if the server's.)
func feed(ctx context.Context, schedule chan<- time.Time, start, end time.Time, dueAt func(k int64) time.Duration) {
	feedNoting(ctx, schedule, start, end, dueAt, nil)
}

// feedNoting is feed, appending to sendLate (when not nil) how late it sent each call, after its
// due time: the load generator's own lateness, which the call's latency counts.
func feedNoting(ctx context.Context, schedule chan<- time.Time, start, end time.Time, dueAt func(k int64) time.Duration, sendLate *[]time.Duration) {
	defer close(schedule)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for k := int64(0); ; {
		due := start.Add(dueAt(k))
		for !due.After(time.Now()) {
			if !due.Before(end) {
				return // the phase's calls are all sent
			}
			if sendLate != nil {
				*sendLate = append(*sendLate, time.Since(due))
			}
			select {
			case schedule <- due:
			case <-ctx.Done():
				return
			}
			k++
			due = start.Add(dueAt(k))
		}
		timer.Reset(time.Until(due))
		select {
		case <-timer.C:
		case <-ctx.Done():
			return
		}
	}
}

// printSchedule says, for an open loop, where its latencies count from, and how late the load
// generator itself sent the calls after they were due: that lateness is in every latency, and
// is not the server's.
func (r *benchResult) printSchedule(w io.Writer, what string) {
	if len(r.sendLate) == 0 {
		return
	}
	late := slices.Sorted(slices.Values(r.sendLate))
	fmt.Fprintf(w, "\nopen loop (%s): latencies count from each call's scheduled start, waiting for a free worker included; the load generator itself sent the calls a median %s (p99 %s) after they were due, which they include as well\n",
		what, pct(late, 50), pct(late, 99))
}

// printBehind says how many calls were cut unanswered (either loop), and, for an open loop,
// where its latencies count from (printSchedule) and how many calls due in the phase were not
// answered by its end: the percentiles are of the answered calls only, so without it a server
// answering a third of the schedule would look as if it kept up. It says nothing of the latter
// while every call due was taken up by a worker (give or take 1 %): then only the calls in
// flight at the end, a normal latency's worth, went unanswered.
func (r *benchResult) printBehind(w io.Writer, what string) {
	r.printSchedule(w, what)
	if r.cut > 0 {
		// Left out of every figure: a server that answered nothing printed an empty table.
		fmt.Fprintf(w, "\n%s: %d calls cut before they were answered (still under way %s after the phase's end, or at an interrupt): left out of the figures above\n",
			what, r.cut, r.grace)
	}
	if r.due == 0 || r.due-r.started <= max(1, r.due/100) {
		return
	}
	answered := 0
	for _, v := range r.latencies {
		answered += len(v)
	}
	fmt.Fprintf(w, "\nopen loop (%s): %d of the %d calls due in the phase not answered by its end, %d of them never started (every worker waiting for an answer): the server fell behind, and the percentiles above leave those out\n",
		what, r.due-answered, r.due, r.due-r.started)
}

func (r *benchResult) verdicts() []string {
	var out []string
	for k := range r.latencies {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// rate is the calls per second of one label, or for "" of all calls answered without an
// error: failed calls have rows of their own, but counted as answers they inflated the no-op
// baseline (the denominator of every ratio) and the "all" ratio whenever calls failed fast.
// A closed loop's calls answered after its end count in the percentiles, not in the rate.
func (r *benchResult) rate(label string) float64 {
	n := 0
	for k, v := range r.latencies {
		if label == "" && !isErrorLabel(k) || k == label {
			n += len(v) - r.late[k]
		}
	}
	return float64(n) / r.elapsed.Seconds()
}

// isErrorLabel reports whether a result's label is that of failed calls.
func isErrorLabel(label string) bool { return strings.HasPrefix(label, "error:") }

// print writes one row per label and returns the rate of the calls answered without an error.
func (r *benchResult) print(w *tabwriter.Writer) float64 {
	for _, label := range r.verdicts() {
		lat := r.latencies[label]
		slices.Sort(lat)
		errs := 0
		if isErrorLabel(label) {
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
