package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/jackc/pgx/v5"

	"github.com/hookverify/hookverify/client"
	"github.com/hookverify/hookverify/internal/pgtest"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage/crdb"
)

// terminate sends SIGTERM, as a rolling deploy does, and waits until the process has drained
// and exited.
func (p *process) terminate() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.t.Errorf("%s: still running 30 s after SIGTERM", p.name)
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
	p.running = false
}

// edgeAnswer is one HTTP answer the edge gave the simulated provider, with the Verify outcome
// behind it.
type edgeAnswer struct {
	event   string
	status  int
	verdict hookverifyv1.Verdict
	opKey   string
	inboxID string
	code    codes.Code
	err     error
	at      time.Time
	final   bool // sent by the pass after the restarts
}

// edgeLog records what the provider heard, per event.
type edgeLog struct {
	mu      sync.Mutex
	answers []edgeAnswer
	next    atomic.Int64
	ids     []string
}

func (l *edgeLog) newID() string {
	id := fmt.Sprintf("evt-%06d", l.next.Add(1))
	l.mu.Lock()
	l.ids = append(l.ids, id)
	l.mu.Unlock()
	return id
}

func (l *edgeLog) randomSent(r *mrand.Rand) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ids) == 0 {
		return ""
	}
	return l.ids[r.IntN(len(l.ids))]
}

func (l *edgeLog) add(a edgeAnswer) {
	l.mu.Lock()
	l.answers = append(l.answers, a)
	l.mu.Unlock()
}

func (l *edgeLog) snapshot() []edgeAnswer {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.answers)
}

// TestRollingRestartBehindClientBalancer runs three server processes on one PostgreSQL
// database behind one edge: client.Dial, with its defaults, to a target that resolves to all
// three (as a DNS name of several addresses does), and client.Handler with its defaults. A
// simulated provider delivers new events and redeliveries, each until it hears a 2xx, while the
// instances are restarted one at a time with SIGTERM, and one of them once more with SIGKILL;
// each restarted instance listens for a while before its storage is ready. Nothing may be lost
// or doubled: every event ends with a 2xx, exactly one ACCEPTED and one inbox record, every
// answer with the event's operation key; the provider never hears a 4xx, which providers treat
// as final, nor a 503 during a graceful restart while other instances serve (GitHub does not
// retry a failed delivery); no call goes to an instance that is not SERVING; and the calls are
// spread over the instances.
func TestRollingRestartBehindClientBalancer(t *testing.T) {
	if testing.Short() {
		t.Skip("rolling restarts take about 30 s")
	}
	t.Parallel()
	rollingRestarts(t, true, func(t *testing.T, addrs []string) *client.Conn {
		// grpc-go has no "ipv4:" target scheme; a static list of addresses is a manual
		// resolver's (or a DNS name's with several addresses).
		instancesResolver := manual.NewBuilderWithScheme("rolling")
		var state resolver.State
		for _, a := range addrs {
			state.Addresses = append(state.Addresses, resolver.Address{Addr: a})
		}
		instancesResolver.InitialState(state)
		conn, err := client.Dial("rolling:///hookverify", client.WithGRPCOptions(grpc.WithResolvers(instancesResolver)))
		if err != nil {
			t.Fatal(err)
		}
		return conn
	})
}

// TestRollingRestartBehindTCPBalancer is the same rolling restart with the instances behind a
// TCP load balancer (as a Kubernetes Service or a cloud network balancer is) that health-checks
// them every second: the edge dials the balancer's one address with the client's defaults.
func TestRollingRestartBehindTCPBalancer(t *testing.T) {
	if testing.Short() {
		t.Skip("rolling restarts take about 30 s")
	}
	t.Parallel()
	rollingRestarts(t, false, func(t *testing.T, addrs []string) *client.Conn {
		lb := startTCPBalancer(t, addrs, time.Second)
		conn, err := client.Dial(lb)
		if err != nil {
			t.Fatal(err)
		}
		return conn
	})
}

// verifyCalls reads the process's Verify calls by gRPC code from its metrics.
func verifyCalls(t *testing.T, p *process) map[string]int {
	t.Helper()
	resp, err := http.Get("http://" + p.httpAddr + "/metrics")
	if err != nil {
		t.Fatalf("%s: metrics: %v", p.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: metrics: %v", p.name, err)
	}
	counts := map[string]int{}
	prefix := `hookverify_grpc_requests_total{code="`
	for _, line := range strings.Split(string(body), "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok || !strings.Contains(line, `method="`+hookverifyv1.VerifierService_Verify_FullMethodName+`"`) {
			continue
		}
		code, _, _ := strings.Cut(rest, `"`)
		var n float64
		fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n)
		counts[code] += int(n)
	}
	return counts
}

// startTCPBalancer listens on a loopback port and hands each connection to the next backend in
// rotation, round robin. A backend leaves the rotation when a health check (every interval)
// does not find it SERVING, and comes back when one does. A connection handed to a backend that
// refuses it is closed, as the connection to a balancer is when its backend is gone.
func startTCPBalancer(t *testing.T, backends []string, interval time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	inRotation := make([]bool, len(backends))
	for i := range inRotation {
		inRotation[i] = true
	}
	next := 0
	pick := func() (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		for range backends {
			i := next % len(backends)
			next++
			if inRotation[i] {
				return backends[i], true
			}
		}
		return "", false
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); ln.Close(); wg.Wait() })
	for i, addr := range backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				// A new connection per check, as many balancers do.
				cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
				serving := false
				if err == nil {
					cctx, ccancel := context.WithTimeout(ctx, interval/2)
					resp, err := healthpb.NewHealthClient(cc).Check(cctx, &healthpb.HealthCheckRequest{})
					ccancel()
					cc.Close()
					serving = err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING
				}
				mu.Lock()
				inRotation[i] = serving
				mu.Unlock()
				select {
				case <-ctx.Done():
				case <-time.After(interval):
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				addr, ok := pick()
				if !ok {
					return
				}
				b, err := net.Dial("tcp", addr)
				if err != nil {
					return
				}
				defer b.Close()
				stop := context.AfterFunc(ctx, func() { c.Close(); b.Close() })
				defer stop()
				done := make(chan struct{}, 2)
				go func() { io.Copy(b, c); done <- struct{}{} }()
				go func() { io.Copy(c, b); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return ln.Addr().String()
}

// migrationLockKey is storage/crdb's advisory lock of migrations.
const migrationLockKey int64 = 0x686f6f6b76657269

// rollingRestarts runs the scenario of TestRollingRestartBehindClientBalancer with the edge's
// connection to the instances made by dial; spread says the edge balances its calls over every
// instance itself (a TCP balancer's one connection goes to one instance at a time).
func rollingRestarts(t *testing.T, spread bool, dial func(t *testing.T, addrs []string) *client.Conn) {
	const instances, providers, newPercent = 3, 6, 70
	const slowStart = 2 * time.Second
	url := pgtest.Shared(t).NewDatabase(t)
	keyFile := masterKeyFile(t)
	procs := make([]*process, instances)
	addrs := make([]string, instances)
	for i := range procs {
		procs[i] = startProcess(t, fmt.Sprintf("instance-%d", i+1), postgresArgs(url, keyFile)...)
		addrs[i] = procs[i].addr
	}
	admin := procs[0].dial()
	defer admin.Close()
	e := createEndpoint(t, admin, "rolling", "github")

	conn := dial(t, addrs)
	defer conn.Close()
	log := &edgeLog{}
	var final atomic.Bool
	mux := http.NewServeMux()
	mux.Handle("/hooks/{endpoint}", client.Handler(conn, client.WithObserver(func(r *http.Request, o client.Outcome) {
		log.add(edgeAnswer{
			event: r.Header.Get("X-GitHub-Delivery"), status: o.Status, verdict: o.Verdict(),
			opKey: o.Response.GetOperationKey(), inboxID: o.Response.GetInboxId(),
			code: o.Code, err: o.Err, at: time.Now(), final: final.Load(),
		})
	})))
	edge := httptest.NewServer(mux)
	defer edge.Close()

	// deliver sends the event as GitHub would until it hears a 2xx (or stop ends), pausing
	// briefly after anything else, as a provider's retry would (compressed in time).
	hc := edge.Client()
	deliver := func(stop context.Context, id string) bool {
		for stop.Err() == nil {
			req := e.delivery(t, id)
			hr, err := http.NewRequest(http.MethodPost, edge.URL+"/hooks/"+e.id, bytes.NewReader(req.GetBody()))
			if err != nil {
				t.Error(err)
				return false
			}
			for _, h := range req.GetHeaders() {
				hr.Header.Add(h.GetName(), h.GetValue())
			}
			resp, err := hc.Do(hr)
			if err != nil {
				if stop.Err() == nil {
					t.Errorf("edge: %v", err)
				}
				return false
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return true
			}
			if resp.StatusCode/100 == 4 {
				return false // final for the provider; the checks below report it
			}
			select {
			case <-stop.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		return false
	}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	for w := range providers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := mrand.New(mrand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for ctx.Err() == nil {
				id := nextEvent(r, newPercent, log.randomSent, log.newID)
				deliver(ctx, id)
			}
		}()
	}
	accepted := func() int {
		n := 0
		for _, a := range log.snapshot() {
			if a.verdict == hookverifyv1.Verdict_VERDICT_ACCEPTED {
				n++
			}
		}
		return n
	}
	waitAccepted := func(what string, more int) {
		before := accepted()
		waitFor(t, what, func() bool { return accepted() >= before+more })
	}

	// Each restart's window: from the signal until the load has gone on for a while after the
	// instance serves again.
	type window struct {
		what      string
		from, to  time.Time
		downtime  time.Duration
		answers   int
		non2xx    int
		byCode    map[codes.Code]int
		firstErrs []string
	}
	var windows []*window
	// Verify calls each instance answered, by code, over its runs (read from its metrics
	// before each restart and at the end).
	served := map[string]map[string]int{}
	countServed := func(p *process) {
		counts := verifyCalls(t, p)
		if served[p.name] == nil {
			served[p.name] = map[string]int{}
		}
		for code, n := range counts {
			served[p.name][code] += n
		}
	}
	restart := func(p *process, kill bool) {
		waitAccepted("load accepts events before the restart", 150)
		countServed(p)
		w := &window{what: "SIGTERM " + p.name, from: time.Now(), byCode: map[codes.Code]int{}}
		if kill {
			w.what = "SIGKILL " + p.name
			p.kill()
		} else {
			p.terminate()
		}
		down := time.Now()
		// A new release starting is not serving at once (it connects to the database and
		// migrates, waiting for an instance migrating the same database): the migration lock,
		// held here for slowStart, keeps the restarted instance listening but NOT_SERVING, its
		// calls answered UNAVAILABLE, meanwhile.
		if slowStart > 0 {
			lock, err := pgx.Connect(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := lock.Exec(context.Background(), "SELECT pg_advisory_lock($1)", migrationLockKey); err != nil {
				t.Fatal(err)
			}
			time.AfterFunc(slowStart, func() { lock.Close(context.Background()) })
		}
		p.start()
		w.downtime = time.Since(down)
		waitAccepted("load accepts events after the restart", 150)
		w.to = time.Now()
		windows = append(windows, w)
	}
	for _, p := range procs {
		restart(p, false)
	}
	restart(procs[1], true)
	stop()
	wg.Wait()
	for _, p := range procs {
		countServed(p)
	}

	// Every event sent is delivered once more after the restarts, until a 2xx.
	final.Store(true)
	ids := slices.Clone(log.ids)
	work := make(chan string)
	var fwg sync.WaitGroup
	for range 4 {
		fwg.Add(1)
		go func() {
			defer fwg.Done()
			for id := range work {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				if !deliver(ctx, id) {
					t.Errorf("%s: no 2xx after the restarts", id)
				}
				cancel()
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	fwg.Wait()

	answers := log.snapshot()
	for _, w := range windows {
		for _, a := range answers {
			if a.at.Before(w.from) || a.at.After(w.to) {
				continue
			}
			w.answers++
			if a.status/100 != 2 {
				w.non2xx++
				w.byCode[a.code]++
				if len(w.firstErrs) < 3 {
					w.firstErrs = append(w.firstErrs, fmt.Sprintf("%d %v: %v", a.status, a.code, a.err))
				}
			}
		}
		t.Logf("%s: down %v, %d answers in the window, %d not 2xx %v %q", w.what, w.downtime.Round(time.Millisecond), w.answers, w.non2xx, w.byCode, w.firstErrs)
		if strings.HasPrefix(w.what, "SIGTERM") && w.non2xx > 0 {
			t.Errorf("%s: the provider heard %d answers other than 2xx while the other instances served", w.what, w.non2xx)
		}
	}
	for _, p := range procs {
		t.Logf("%s answered Verify calls (by code, over every start): %v", p.name, served[p.name])
		if n := served[p.name]["Unavailable"]; n > 0 {
			t.Errorf("%s answered %d Verify calls UNAVAILABLE: the edge sent them to an instance that was not SERVING", p.name, n)
		}
		if spread && served[p.name]["OK"] < 100 {
			t.Errorf("%s answered only %d Verify calls: the edge does not spread its calls over the instances", p.name, served[p.name]["OK"])
		}
	}

	// The provider's view, checked per event.
	byEvent := map[string][]edgeAnswer{}
	statuses := map[int]int{}
	for _, a := range answers {
		byEvent[a.event] = append(byEvent[a.event], a)
		statuses[a.status]++
	}
	t.Logf("%d events, %d HTTP answers by status %v", len(ids), len(answers), statuses)
	failures := &failureLog{t: t}
	fail := failures.fail
	inbox := map[string]string{}
	for _, id := range ids {
		want := server.OperationKey(e.id, id)
		acceptedN, got2xx := 0, false
		for _, a := range byEvent[id] {
			switch {
			case a.status/100 == 4:
				fail("%s: the provider heard %d (%v %v), final for it", id, a.status, a.verdict, a.err)
			case a.status/100 == 2:
				got2xx = true
			}
			if a.code != codes.OK || a.err != nil {
				continue
			}
			if checkAnswer(failures, inbox, id, want, a.verdict, a.opKey, a.inboxID) {
				acceptedN++
			}
		}
		if acceptedN > 1 {
			fail("%s: ACCEPTED %d times", id, acceptedN)
		}
		if !got2xx {
			fail("%s: never answered 2xx", id)
		}
	}
	failures.done()
	st, err := crdb.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkStore(t, st, e.id, inbox)
}
