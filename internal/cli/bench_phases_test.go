package cli

import (
	"context"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// TestBenchRefusesANonPositiveDuration: --duration 0 or negative ran no call at all and
// printed an empty table (exit 0), after creating an endpoint and priming it on the server.
func TestBenchRefusesANonPositiveDuration(t *testing.T) {
	for _, d := range []string{"0", "-2s"} {
		// Refused before any server is called (none is listening there).
		code, _, errOut := run(t, "", "bench", "--server", "127.0.0.1:1", "--duration", d)
		if code != 2 || !strings.Contains(errOut, "--duration") {
			t.Errorf("bench --duration %s: exit %d (%s), want 2 (usage) naming --duration", d, code, errOut)
		}
	}
}

// TestBenchErrorsAreNotThroughput: failed calls have rows of their own, but calls/s for
// "all" and the no-op baseline's rate (the denominator of every ratio) counted them as calls
// answered: a no-op phase failing fast (UNAVAILABLE, RESOURCE_EXHAUSTED) inflated the baseline,
// and a verify phase failing fast read as throughput in the "all" ratio.
func TestBenchErrorsAreNotThroughput(t *testing.T) {
	ms := func(n int) []time.Duration { return slices.Repeat([]time.Duration{time.Millisecond}, n) }
	res := &benchResult{elapsed: time.Second, latencies: map[string][]time.Duration{
		"noop":                         ms(100),
		"error:" + "Unavailable":       ms(900),
		"error:" + "ResourceExhausted": ms(50),
	}, errors: 950}
	var sb strings.Builder
	out := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', 0)
	if got := res.print(out); got != 100 {
		t.Errorf("rate of the answered calls = %v/s, want 100/s (the 950 failed calls are not throughput)", got)
	}
	out.Flush()
	if !strings.Contains(sb.String(), "error:Unavailable") {
		t.Errorf("the failed calls have no row:\n%s", sb.String())
	}
	if got := res.rate(""); got != 100 {
		t.Errorf("rate(\"\") = %v, want 100", got)
	}
}

// TestBenchClosedLoopKeepsTheCallsUnderWayAtItsEnd: a closed loop cut the calls under way
// at its end and left them out. Those are the slowest (a call in flight at a given moment is
// more likely a long one), and a stall spanning the end (a checkpoint, say) vanished from the
// percentiles altogether; a server that answered nothing in the phase printed an empty table,
// with no error and no word of the calls it never answered. They are now waited for and
// counted in the percentiles, while calls/s stays the answers within the phase per second.
func TestBenchClosedLoopKeepsTheCallsUnderWayAtItsEnd(t *testing.T) {
	const phase = 300 * time.Millisecond
	start := time.Now()
	stallAt := start.Add(200 * time.Millisecond)
	stallingAtTheEnd := func(ctx context.Context, _ int, _ *mrand.Rand) (string, int, error) {
		d := time.Millisecond
		if time.Now().After(stallAt) {
			d = 250 * time.Millisecond // started in the stall: answered after the phase's end
		}
		select {
		case <-ctx.Done():
			return "cut", 0, ctx.Err()
		case <-time.After(d):
		}
		return "accepted", 0, nil
	}
	res := drive(t.Context(), loadShape{workers: 4, duration: phase}, stallingAtTheEnd)
	lat := res.latencies["accepted"]
	slices.Sort(lat)
	slow := 0
	for _, d := range lat {
		if d >= 200*time.Millisecond {
			slow++
		}
	}
	if slow != 4 {
		t.Errorf("%d slow calls among the latencies, want the 4 under way at the end (of %d calls; latencies %v)", slow, len(lat), lat[max(len(lat)-6, 0):])
	}
	if _, cut := res.latencies["cut"]; cut {
		t.Errorf("calls cut: %v", res.verdicts())
	}
	// calls/s counts the answers within the phase, over the phase.
	if want := float64(len(lat)-slow) / phase.Seconds(); res.rate("accepted") != want {
		t.Errorf("rate %v/s, want %v/s (the %d calls answered in the %v phase)", res.rate("accepted"), want, len(lat)-slow, phase)
	}
	if res.elapsed != phase {
		t.Errorf("elapsed %v, want the phase's %v", res.elapsed, phase)
	}

	// A server answering nothing: every call is cut after the grace, and the result says so.
	hung := func(ctx context.Context, _ int, _ *mrand.Rand) (string, int, error) {
		<-ctx.Done()
		return "error:DeadlineExceeded", 0, ctx.Err()
	}
	res = drive(t.Context(), loadShape{workers: 3, duration: 100 * time.Millisecond, grace: 100 * time.Millisecond}, hung)
	var sb strings.Builder
	res.printBehind(&sb, "verify")
	if res.cut != 3 || !strings.Contains(sb.String(), "3 calls") {
		t.Errorf("hung server: cut %d, printed %q; want the 3 calls under way said unanswered", res.cut, sb.String())
	}
}

// TestBenchOpenLoopSaysWhereItsLatenciesCountFrom: an open loop's latency counts from
// each call's scheduled start, so the load generator's own lateness in sending a call is in
// it, as if the server's; the output said neither. It now says both. (The schedule woke on a
// 1 ms ticker and sent each call up to 1 ms late; it now wakes when the next call is due, which
// cut the median lateness in a bench run from 0.56-0.88 ms to 0.46 ms. That is measured, not
// asserted here: a timed assertion fails on a loaded machine. This test logs the latency.)
func TestBenchOpenLoopSaysWhereItsLatenciesCountFrom(t *testing.T) {
	instant := func(context.Context, int, *mrand.Rand) (string, int, error) { return "accepted", 0, nil }
	res := drive(t.Context(), loadShape{workers: 2, duration: 300 * time.Millisecond, rate: 300}, instant)
	lat := res.latencies["accepted"]
	// Not a bound on how many of the 90 due were answered: a busy machine (CI runs packages side
	// by side on two cores) can starve the schedule for part of the 300 ms.
	if len(lat) == 0 || len(res.sendLate) != res.started {
		t.Fatalf("%d calls answered of the 90 due, %d send times noted of %d started", len(lat), len(res.sendLate), res.started)
	}
	slices.Sort(lat)
	t.Logf("calls answered at once: latency p50 %v, p99 %v", lat[len(lat)/2], lat[len(lat)*99/100])
	var sb strings.Builder
	res.printBehind(&sb, "verify")
	if s := sb.String(); !strings.Contains(s, "from each call's scheduled start") || !strings.Contains(s, "the load generator itself sent the calls a median") {
		t.Errorf("the open loop does not say where its latencies count from, nor how late it sent the calls:\n%s", s)
	}
	// A closed loop has no schedule: nothing to say.
	sb.Reset()
	closed := drive(t.Context(), loadShape{workers: 1, duration: 50 * time.Millisecond}, instant)
	closed.printBehind(&sb, "verify")
	if sb.Len() != 0 {
		t.Errorf("closed loop printed %q", sb.String())
	}
}
