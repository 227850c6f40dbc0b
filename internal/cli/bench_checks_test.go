package cli

import (
	"context"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestBenchRefusesBadMixAndRate: a mix that names a kind twice (the last weight silently won,
// while the header printed the mix as given) or whose weights overflow when added up (the
// workers then panicked in rand.IntN, after the bench had created its endpoint), and a --rate
// the schedule cannot keep (NaN ran a closed loop; a rate so small or so large that the interval
// between calls overflows or rounds to zero started calls without end) are usage errors.
func TestBenchRefusesBadMixAndRate(t *testing.T) {
	for _, mix := range []string{"new=0,dup=5,new=1", "dup=1,dup=1", "new=9223372036854775807,dup=1", "new=4611686018427387904,dup=4611686018427387904"} {
		if _, err := parseMix(mix); err == nil {
			t.Errorf("parseMix(%q) accepted", mix)
		}
		// Refused before any server is called (none is listening there).
		if code, _, errOut := run(t, "", "bench", "--server", "127.0.0.1:1", "--mix", mix); code != 2 {
			t.Errorf("bench --mix %s: exit %d (%s), want 2 (usage)", mix, code, errOut)
		}
	}
	if w, err := parseMix("new=80,dup=15,forged=5"); err != nil || w != [3]int{80, 15, 5} {
		t.Errorf("parseMix of the default: %v, %v", w, err)
	}
	for _, rate := range []string{"NaN", "+Inf", "1e-300", "1e12"} {
		if code, _, errOut := run(t, "", "bench", "--server", "127.0.0.1:1", "--rate", rate); code != 2 {
			t.Errorf("bench --rate %s: exit %d (%s), want 2 (usage)", rate, code, errOut)
		}
	}
}

// TestBenchOpenLoopSaysWhatWasNotAnswered: in an open loop a server that falls behind leaves
// calls scheduled in the phase unanswered at its end (never started, or in flight); the
// latencies printed are of the answered ones only, so the bench must say how many were not,
// or a server answering a third of the schedule shows percentiles as if it kept up.
func TestBenchOpenLoopSaysWhatWasNotAnswered(t *testing.T) {
	slow := func(ctx context.Context, _ int, _ *mrand.Rand) (string, int, error) {
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
		return "accepted", 0, nil
	}
	res := drive(t.Context(), loadShape{workers: 2, duration: 300 * time.Millisecond, rate: 1000}, slow)
	answered := len(res.latencies["accepted"])
	if answered < 1 || answered > 20 {
		t.Fatalf("answered %d calls, want about 12", answered)
	}
	if res.due < 290 || res.due > 301 {
		t.Errorf("due = %d, want the 300 calls the schedule started in 300 ms", res.due)
	}
	var out strings.Builder
	res.printBehind(&out, "accepted")
	if !strings.Contains(out.String(), "not answered") {
		t.Errorf("no line on the unanswered calls:\n%s", out.String())
	}
	// A closed loop has no schedule: nothing to say.
	closed := drive(t.Context(), loadShape{workers: 2, duration: 100 * time.Millisecond}, slow)
	out.Reset()
	closed.printBehind(&out, "accepted")
	if closed.due != 0 || out.Len() != 0 {
		t.Errorf("closed loop: due %d, printed %q", closed.due, out.String())
	}
}

// TestBenchOpenLoopWaitsForTheCallsUnderWayAtItsEnd: the calls in flight when an open loop's
// phase ends are its slowest; cut and left out, they went unseen in the percentiles. They are
// now answered (within openLoopGrace) and counted, at their latency from their scheduled start,
// and the rate stays per second of the phase.
func TestBenchOpenLoopWaitsForTheCallsUnderWayAtItsEnd(t *testing.T) {
	slowerThanThePhase := func(ctx context.Context, _ int, _ *mrand.Rand) (string, int, error) {
		select {
		case <-ctx.Done():
			return "cut", 0, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		return "accepted", 0, nil
	}
	load := loadShape{workers: 4, duration: 200 * time.Millisecond, rate: 10}
	res := drive(t.Context(), load, slowerThanThePhase)
	lat := res.latencies["accepted"]
	if len(lat) != 2 || res.due != 2 || len(res.latencies) != 1 {
		t.Fatalf("latencies %v, due %d; want the 2 calls due in the phase, answered after its end", res.latencies, res.due)
	}
	for _, d := range lat {
		if d < 300*time.Millisecond {
			t.Errorf("latency %v, less than the call took", d)
		}
	}
	if res.elapsed != load.duration {
		t.Errorf("elapsed %v, want the phase's %v", res.elapsed, load.duration)
	}
}

// TestBenchOpenLoopCommand runs the open loop against a server, far above what it can answer
// and with --baseline: the result says how many calls were not answered, and prints no calls/s
// ratio to the no-op, which at a fixed rate ran at that rate as well (the ratio read 1.00x,
// "as fast as a no-op", whatever the server's cost).
func TestBenchOpenLoopCommand(t *testing.T) {
	remote, _ := startTestServer(t)
	code, out, errOut := run(t, "", append([]string{"bench", "--duration", "300ms", "--workers", "2", "--mix", "new=100", "--rate", "50000", "--baseline"}, remote...)...)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, errOut)
	}
	if !strings.Contains(out, "not answered") {
		t.Errorf("open loop far behind: no line on the unanswered calls:\n%s", out)
	}
	if strings.Contains(out, "ratio to the no-op gRPC baseline (calls/s)") {
		t.Errorf("open loop printed a calls/s ratio to a no-op run at the same schedule:\n%s", out)
	}
	// At a rate it keeps, nothing is said of unanswered calls beyond the few in flight at
	// the end.
	code, out, errOut = run(t, "", append([]string{"bench", "--duration", "500ms", "--workers", "8", "--mix", "dup=100", "--rate", "20"}, remote...)...)
	if code != 0 || !hasRow(out, "duplicate") || strings.Contains(out, "not answered") {
		t.Errorf("open loop at 20/s: exit %d (%s):\n%s", code, errOut, out)
	}
}

// emptyInbox answers every Lease with no deliveries, at once.
type emptyInbox struct {
	hookverifyv1.InboxServiceClient
}

func (emptyInbox) Lease(context.Context, *hookverifyv1.LeaseRequest, ...grpc.CallOption) (*hookverifyv1.LeaseResponse, error) {
	return &hookverifyv1.LeaseResponse{}, nil
}

// TestBenchEmptyLeaseLatencyIsTheCall: a drain worker that found nothing waits 10 ms before
// leasing again, as a polling worker would; that pause is the bench's, not the server's, and
// must not be counted in the "lease (empty)" row's latency (it put every row at 10 ms and more
// when the server answered in microseconds).
func TestBenchEmptyLeaseLatencyIsTheCall(t *testing.T) {
	res := drive(t.Context(), loadShape{workers: 1, duration: 200 * time.Millisecond}, drainer(emptyInbox{}, "bench-x", 1, 10, false))
	lat := res.latencies["lease (empty)"]
	if len(lat) < 5 || len(lat) > 25 {
		t.Errorf("%d empty leases in 200 ms with a 10 ms pause after each, want about 20", len(lat))
	}
	// With the pause counted every latency is 10 ms or more; without it nearly all are
	// microseconds, but on a loaded machine a goroutine descheduled mid-call may take a few
	// milliseconds now and then, so the median decides, not each one.
	slices.Sort(lat)
	if len(lat) > 0 && lat[len(lat)/2] >= 5*time.Millisecond {
		t.Fatalf("empty leases answered at once have a median of %v in the results: the pause is counted (%v)", lat[len(lat)/2], lat)
	}
	if len(res.latencies) != 1 {
		t.Errorf("rows %v, want lease (empty) only", res.verdicts())
	}
}

// TestBenchOpenLoopSchedulesRateTimesDuration: an open loop schedules rate × duration calls,
// each due at k/rate to the nearest nanosecond. Adding up an interval rounded down to the
// nanosecond scheduled one call too many at 3,000/s (6,001 in 2 s) and drifted earlier with
// every call; rounding k/rate down put the call due at the phase's end a nanosecond inside it
// at rates float64 holds only approximately (1.1, 0.07, 0.55): 34 calls in 30 s at 1.1/s.
func TestBenchOpenLoopSchedulesRateTimesDuration(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		duration time.Duration
		want     int
	}{
		{3000, 2 * time.Second, 6000},
		{7, time.Second, 7},
		{3, time.Second, 3},
		{1e6, time.Second, 1000000},
		{0.01, 100 * time.Second, 1},
		{0.01, 100*time.Second + 1, 2},
		{1000, 0, 0},
		{1000, 1, 1},
		{1.1, 30 * time.Second, 33},
		{1.1, 60 * time.Second, 66},
		{0.07, 100 * time.Second, 7},
		{0.55, 60 * time.Second, 33},
		{0.3, 10 * time.Second, 3},
		{2.5, 2 * time.Second, 5},
	} {
		load := loadShape{rate: tc.rate, duration: tc.duration}
		if got := load.callsDueWithin(tc.duration); got != tc.want {
			t.Errorf("rate %v over %v: callsDueWithin = %d, want %d", tc.rate, tc.duration, got, tc.want)
		}
		if tc.want >= 1<<16 {
			continue // more than the schedule's buffer: feed would wait for a reader
		}
		// feed, on the same rule, sends as many for a phase already past (and the call after
		// it due too, so that feed returns at once rather than at that call's time).
		start := time.Now().Add(-tc.duration - time.Duration(float64(time.Second)/tc.rate) - time.Second)
		schedule := make(chan time.Time, 1<<16)
		feed(t.Context(), schedule, start, start.Add(tc.duration), load.dueAt)
		n := 0
		for due := range schedule {
			if want := start.Add(time.Duration(math.Round(float64(n) * float64(time.Second) / tc.rate))); !due.Equal(want) {
				t.Fatalf("rate %v: call %d due at %v, want %v", tc.rate, n, due.Sub(start), want.Sub(start))
			}
			n++
		}
		if n != tc.want {
			t.Errorf("rate %v over %v: feed sent %d calls, want %d", tc.rate, tc.duration, n, tc.want)
		}
	}
}
