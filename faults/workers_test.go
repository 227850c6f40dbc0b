package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/pgtest"
	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// workScript is the command of the `hookverify worker` processes: it appends a start line, then
// (by $MODE) runs past its first lease (5 s of a 3 s visibility), noting a beat every 0.2 s, or fails the first run of each operation key, and
// appends a done or fail line. Lines: kind key inbox attempt worker pid unix-ns.
const workScript = `
line() { echo "$1 $HOOKVERIFY_OPERATION_KEY $HOOKVERIFY_INBOX_ID $HOOKVERIFY_ATTEMPT $WORKER $$ $(date +%s%N)" >> "$RUNLOG"; }
line start
case "$MODE" in
slow) for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25; do sleep 0.2; line beat; done ;;
flaky) if mkdir "$RUNDIR/failed-$HOOKVERIFY_OPERATION_KEY" 2>/dev/null; then line fail; exit 1; fi ;;
esac
line done
`

// workerProc is one `hookverify worker` process.
type workerProc struct {
	name   string
	cmd    *exec.Cmd
	out    *syncbuf.Buffer
	exited chan struct{}
}

// runLine is one line of the run log.
type runLine struct {
	kind, key, inbox, attempt, worker, pid string
	at                                     time.Time
	leasedUntil                            time.Time // Go workers only
}

// TestWorkersDrainThroughRollingRestartsAndAnOutage runs `hookverify worker` processes (fast,
// slow past part of their lease, failing each delivery once) and a Go worker on three server
// instances of one PostgreSQL database behind a health-checking TCP balancer, while new events
// are accepted, the instances are restarted one at a time (SIGTERM, then one SIGKILL) and
// PostgreSQL is stopped for a few seconds. Every accepted delivery's command must run to
// success and its ack land (the inbox ends empty); no delivery runs twice at once; a failed run
// is retried under the same operation key; the workers survive, exit 0 on SIGTERM, and do not
// spin while nothing serves.
func TestWorkersDrainThroughRollingRestartsAndAnOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts and an outage take about 40 s")
	}
	t.Parallel()
	cluster := pgtest.Start(t)
	url := cluster.NewDatabase(t)
	keyFile := masterKeyFile(t)
	procs := make([]*process, 3)
	addrs := make([]string, len(procs))
	for i := range procs {
		procs[i] = startProcess(t, fmt.Sprintf("instance-%d", i+1), postgresArgs(url, keyFile)...)
		addrs[i] = procs[i].addr
	}
	admin := procs[0].dial()
	defer admin.Close()
	e := createEndpoint(t, admin, "workers", "github")

	// The edge and the Go worker balance over the instances themselves; the worker processes
	// dial a balancer.
	rb := manual.NewBuilderWithScheme("workers")
	var rs resolver.State
	for _, a := range addrs {
		rs.Addresses = append(rs.Addresses, resolver.Address{Addr: a})
	}
	rb.InitialState(rs)
	edge, err := client.Dial("workers:///hookverify", client.WithGRPCOptions(grpc.WithResolvers(rb)))
	if err != nil {
		t.Fatal(err)
	}
	defer edge.Close()
	lb := startTCPBalancer(t, addrs, 250*time.Millisecond)

	dir := t.TempDir()
	runLog := filepath.Join(dir, "runs.log")
	script := filepath.Join(dir, "work.sh")
	if err := os.WriteFile(script, []byte(workScript), 0o755); err != nil {
		t.Fatal(err)
	}

	// The producer: new events, each delivered until ACCEPTED or DUPLICATE.
	var accMu sync.Mutex
	accepted := map[string]string{} // operation key -> event id
	var nextEvent atomic.Int64
	produce, stopProducing := context.WithCancel(context.Background())
	var pwg sync.WaitGroup
	defer func() { stopProducing(); pwg.Wait() }()
	for range 2 {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for produce.Err() == nil {
				id := fmt.Sprintf("evt-%06d", nextEvent.Add(1))
				for produce.Err() == nil {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					resp, err := edge.Verifier.Verify(ctx, e.delivery(nil, id))
					cancel()
					if err == nil && (resp.GetVerdict() == hookverifyv1.Verdict_VERDICT_ACCEPTED || resp.GetVerdict() == hookverifyv1.Verdict_VERDICT_DUPLICATE) {
						accMu.Lock()
						accepted[resp.GetOperationKey()] = id
						accMu.Unlock()
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				time.Sleep(15 * time.Millisecond)
			}
		}()
	}

	// The worker processes.
	var workers []*workerProc
	startWorker := func(name, mode string) {
		w := &workerProc{name: name, out: &syncbuf.Buffer{}, exited: make(chan struct{})}
		w.cmd = exec.Command(hookverifyBinary(t), "worker", "--server", lb, "--visibility", "3s", "--retry-after", "0s",
			"--idle", "100ms", "--timeout", "5s", "--grace", "5s", "--", "sh", script)
		w.cmd.Env = append(os.Environ(), "WORKER="+name, "MODE="+mode, "RUNLOG="+runLog, "RUNDIR="+dir)
		w.cmd.Stdout, w.cmd.Stderr = w.out, w.out
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { w.cmd.Wait(); close(w.exited) }()
		t.Cleanup(func() {
			w.cmd.Process.Kill()
			<-w.exited
			if t.Failed() {
				t.Logf("--- worker %s output ---\n%s", w.name, tail(w.out.String(), 8<<10))
			}
		})
		workers = append(workers, w)
	}
	startWorker("fast-1", "fast")
	startWorker("fast-2", "fast")
	startWorker("slow-1", "slow")
	startWorker("slow-2", "slow")
	startWorker("flaky-1", "flaky")

	// The Go worker: Lease, a short job, Ack; each run logged with its lease's end.
	var goMu sync.Mutex
	var goLines []runLine
	goErrs := map[string]int{}
	goWork, stopGoWork := context.WithCancel(context.Background())
	goDone := make(chan struct{})
	defer func() { stopGoWork(); <-goDone }()
	go func() {
		defer close(goDone)
		for goWork.Err() == nil {
			ctx, cancel := context.WithTimeout(goWork, 5*time.Second)
			resp, err := edge.Inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: []string{e.id}, MaxDeliveries: 1, VisibilityTimeout: durationpb.New(3 * time.Second)})
			cancel()
			if err != nil || len(resp.GetDeliveries()) == 0 {
				if err != nil {
					goMu.Lock()
					goErrs["lease "+status.Code(err).String()]++
					goMu.Unlock()
				}
				time.Sleep(100 * time.Millisecond)
				continue
			}
			d := resp.GetDeliveries()[0]
			l := runLine{key: d.GetOperationKey(), inbox: d.GetInboxId(), attempt: strconv.Itoa(int(d.GetAttempts())), worker: "go", pid: "go", leasedUntil: d.GetLeasedUntil().AsTime()}
			start := l
			start.kind, start.at = "start", time.Now()
			time.Sleep(10 * time.Millisecond)
			end := l
			end.kind, end.at = "done", time.Now()
			goMu.Lock()
			goLines = append(goLines, start, end)
			goMu.Unlock()
			for attempt := 0; attempt < 20; attempt++ {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := edge.Inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()})
				cancel()
				if err == nil {
					break
				}
				goMu.Lock()
				goErrs["ack "+status.Code(err).String()]++
				goMu.Unlock()
				if status.Code(err) != codes.Unavailable {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	}()

	runs := func() []runLine {
		raw, _ := os.ReadFile(runLog)
		var out []runLine
		for _, s := range strings.Split(string(raw), "\n") {
			f := strings.Fields(s)
			if len(f) != 7 {
				continue
			}
			ns, _ := strconv.ParseInt(f[6], 10, 64)
			out = append(out, runLine{kind: f[0], key: f[1], inbox: f[2], attempt: f[3], worker: f[4], pid: f[5], at: time.Unix(0, ns)})
		}
		goMu.Lock()
		out = append(out, goLines...)
		goMu.Unlock()
		return out
	}
	doneRuns := func() int {
		n := 0
		for _, r := range runs() {
			if r.kind == "done" {
				n++
			}
		}
		return n
	}
	waitRuns := func(what string, more int) {
		before := doneRuns()
		waitFor(t, what, func() bool { return doneRuns() >= before+more })
	}

	began := time.Now()
	waitRuns("workers run deliveries", 60)
	for _, p := range procs {
		p.terminate()
		time.Sleep(300 * time.Millisecond)
		p.start()
		waitRuns("workers run deliveries after a restart", 40)
	}
	procs[1].kill()
	time.Sleep(300 * time.Millisecond)
	procs[1].start()
	waitRuns("workers run deliveries after the SIGKILL", 40)

	workerLines := func() []int {
		var n []int
		for _, w := range workers {
			n = append(n, strings.Count(w.out.String(), "\n"))
		}
		return n
	}
	linesBefore := workerLines()
	cluster.Stop(t)
	outageStart := time.Now()
	time.Sleep(4 * time.Second)
	cluster.Start(t)
	outage := time.Since(outageStart)
	linesDuring := workerLines()
	waitRuns("workers run deliveries after the outage", 40)

	stopProducing()
	pwg.Wait()
	stopped := time.Now()
	accMu.Lock()
	keys := make(map[string]string, len(accepted))
	for k, v := range accepted {
		keys[k] = v
	}
	accMu.Unlock()

	// Drained: every accepted delivery's command succeeded, and the inbox holds nothing pending
	// or leased.
	drained := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := edge.Inbox.GetInboxStats(ctx, &hookverifyv1.GetInboxStatsRequest{})
		if err != nil {
			return false
		}
		for _, s := range st.GetEndpoints() {
			if s.GetPending() > 0 || s.GetLeased() > 0 {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(30 * time.Second)
	for !drained() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	drainTime := time.Since(stopped)
	stopGoWork()
	<-goDone
	for _, w := range workers {
		w.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, w := range workers {
		select {
		case <-w.exited:
			if code := w.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("worker %s exited %d after SIGTERM", w.name, code)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("worker %s still runs 15 s after SIGTERM", w.name)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	stats, err := edge.Inbox.GetInboxStats(ctx, &hookverifyv1.GetInboxStatsRequest{})
	cancel()
	if err != nil {
		t.Fatalf("inbox stats: %v", err)
	}
	for _, s := range stats.GetEndpoints() {
		t.Logf("inbox of %s: %d pending, %d leased, %d dead", s.GetEndpointId(), s.GetPending(), s.GetLeased(), s.GetDead())
		if s.GetPending() > 0 || s.GetLeased() > 0 || s.GetDead() > 0 {
			t.Errorf("inbox of %s not drained: %d pending, %d leased, %d dead", s.GetEndpointId(), s.GetPending(), s.GetLeased(), s.GetDead())
		}
	}

	// Per operation key: its runs, in order of start, each with its end if it logged one.
	type run struct {
		start, end runLine
		ended      bool
		last       time.Time // the last line the run wrote
	}
	byKey := map[string][]*run{}
	open := map[string]*run{} // by worker and pid
	all := runs()
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	for _, l := range all {
		id := l.worker + "/" + l.pid + "/" + l.key
		switch l.kind {
		case "beat":
			if r := open[id]; r != nil {
				r.last = l.at
			}
		case "start":
			r := &run{start: l, last: l.at}
			open[id] = r
			byKey[l.key] = append(byKey[l.key], r)
		case "done", "fail":
			if r := open[id]; r != nil {
				r.end, r.ended, r.last = l, true, l.at
				delete(open, id)
			}
		}
	}
	failures := &failureLog{t: t}
	fail := failures.fail
	extraRuns, unended, failedRuns, overlaps := 0, 0, 0, 0
	for key, id := range keys {
		rs := byKey[key]
		succeeded := false
		for i, r := range rs {
			if !r.ended {
				unended++
			} else if r.end.kind == "fail" {
				failedRuns++
			} else {
				succeeded = true
			}
			for _, prev := range rs[:i] {
				// An earlier run still going when this one started: two at once.
				if prev.last.After(r.start.at) {
					overlaps++
					fail("%s (%s): run by %s/%s (attempt %s) started at %s while the run by %s/%s (attempt %s, leased until %s) went on at least until %s",
						id, key, r.start.worker, r.start.pid, r.start.attempt, r.start.at.Format("15:04:05.000"),
						prev.start.worker, prev.start.pid, prev.start.attempt, prev.start.leasedUntil.Format("15:04:05.000"), prev.last.Format("15:04:05.000"))
				}
			}
		}
		if !succeeded {
			fail("%s (%s): no run succeeded (%d runs)", id, key, len(rs))
		}
		ok := 0
		for _, r := range rs {
			if r.ended && r.end.kind == "done" {
				ok++
			}
		}
		if ok > 1 {
			extraRuns += ok - 1
		}
	}

	// Worker logs by kind.
	kinds := map[string]int{}
	for _, w := range workers {
		for _, s := range strings.Split(w.out.String(), "\n") {
			switch {
			case s == "":
			case strings.Contains(s, "not settled"):
				kinds["not settled"]++
				t.Logf("%s: %s", w.name, s)
			case strings.Contains(s, "worker: lease:"):
				kinds["lease retry"]++
			case strings.Contains(s, "worker: settle"):
				kinds["settle retry"]++
			case strings.Contains(s, "worker: extend lease"):
				kinds["extend retry"]++
			case strings.Contains(s, "lease lost"):
				kinds["lease lost"]++
			case strings.Contains(s, "failed:"):
				kinds["run failed"]++
			default:
				kinds["other"]++
				t.Logf("%s: %s", w.name, s)
			}
		}
	}
	for i, w := range workers {
		if n := linesDuring[i] - linesBefore[i]; n > 40 {
			t.Errorf("worker %s wrote %d log lines during the %v outage: it spins", w.name, n, outage.Round(time.Millisecond))
		}
	}
	goMu.Lock()
	t.Logf("%d deliveries accepted in %v; drained %v after the producer stopped; %d successful runs more than one per delivery, %d runs that failed, %d runs never ended (killed), %d overlapping runs; worker logs by kind %v; Go worker errors %v; worker log lines during the %v outage %v",
		len(keys), stopped.Sub(began).Round(time.Millisecond), drainTime.Round(time.Millisecond), extraRuns, failedRuns, unended, overlaps, kinds, goErrs, outage.Round(time.Millisecond), func() []int {
			var d []int
			for i := range linesBefore {
				d = append(d, linesDuring[i]-linesBefore[i])
			}
			return d
		}())
	goMu.Unlock()
	failures.done()
}
