package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/hookverify/hookverify/internal/syncbuf"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// unavailableOnce answers the first call of a kind UNAVAILABLE with msg and the others
// normally: a server restart or a blip the worker must outlast.
func unavailableOnce(msg string) func(n int) error {
	return func(n int) error {
		if n == 1 {
			return status.Error(codes.Unavailable, msg)
		}
		return nil
	}
}

// fakeInbox is an InboxService whose answers each test chooses, recording what the worker
// asked of it. It hands out one delivery (the first successful lease) and nothing after.
type fakeInbox struct {
	hookverifyv1.UnimplementedInboxServiceServer

	mu     sync.Mutex
	leases int
	acks   []string // "ok" or the code returned
	nacks  []string
	// retryAfters holds each nack's retry_after.
	retryAfters []time.Duration
	// givenBack counts the nacks sent with not_attempted (the attempt given back).
	givenBack int
	extends   []string
	ackCalls  int
	handed    bool
	extCalls  int

	// leaseErr, when set, answers lease number n (1-based) with an error; nil = normal.
	leaseErr func(n int) error
	// leaseBlock makes every Lease wait for its caller to give up.
	leaseBlock bool
	// ackErr, extendErr answer call number n (1-based).
	ackErr    func(n int) error
	extendErr func(n int) error
	// unknown, when set, makes every lease empty, naming these endpoint ids unknown.
	unknown []string
}

func (f *fakeInbox) delivery() *hookverifyv1.InboxDelivery {
	return &hookverifyv1.InboxDelivery{
		InboxId: "inb_1", EndpointId: "ep", DedupeScope: "ep", EventId: "evt_1", OperationKey: "op_1",
		Body: []byte(`{"id":"evt_1"}`), Attempts: 1, LeaseToken: "lease_1",
		Method: "POST", Url: "https://hooks.example.com/ep?tenant=7",
		Headers:     []*hookverifyv1.HeaderField{{Name: "X-GitHub-Event", Value: "push"}, {Name: "X-GitHub-Event", Value: `a "second"`}},
		LeasedUntil: timestamppb.New(time.Now().Add(time.Minute)),
	}
}

func (f *fakeInbox) Lease(ctx context.Context, _ *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	if f.leaseBlock {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leases++
	if f.leaseErr != nil {
		if err := f.leaseErr(f.leases); err != nil {
			return nil, err
		}
	}
	if f.unknown != nil {
		return &hookverifyv1.LeaseResponse{UnknownEndpointIds: f.unknown}, nil
	}
	// Hand out the delivery once, as a real server would while its lease is live.
	if f.handed {
		return &hookverifyv1.LeaseResponse{}, nil
	}
	f.handed = true
	return &hookverifyv1.LeaseResponse{Deliveries: []*hookverifyv1.InboxDelivery{f.delivery()}}, nil
}

func (f *fakeInbox) Ack(context.Context, *hookverifyv1.AckRequest) (*hookverifyv1.AckResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ackCalls++
	if f.ackErr != nil {
		if err := f.ackErr(f.ackCalls); err != nil {
			f.acks = append(f.acks, status.Code(err).String())
			return nil, err
		}
	}
	f.acks = append(f.acks, "ok")
	return &hookverifyv1.AckResponse{}, nil
}

func (f *fakeInbox) Nack(_ context.Context, req *hookverifyv1.NackRequest) (*hookverifyv1.NackResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nacks = append(f.nacks, req.GetError())
	f.retryAfters = append(f.retryAfters, req.GetRetryAfter().AsDuration())
	if req.GetNotAttempted() {
		f.givenBack++
	}
	return &hookverifyv1.NackResponse{}, nil
}

func (f *fakeInbox) ExtendLease(context.Context, *hookverifyv1.ExtendLeaseRequest) (*hookverifyv1.ExtendLeaseResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.extCalls++
	if f.extendErr != nil {
		if err := f.extendErr(f.extCalls); err != nil {
			f.extends = append(f.extends, status.Code(err).String())
			return nil, err
		}
	}
	f.extends = append(f.extends, "ok")
	return &hookverifyv1.ExtendLeaseResponse{LeasedUntil: timestamppb.New(time.Now().Add(time.Minute))}, nil
}

func (f *fakeInbox) givenBackCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.givenBack
}

func (f *fakeInbox) snapshot() (acks, nacks, extends []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.acks...), append([]string(nil), f.nacks...), append([]string(nil), f.extends...)
}

// startFakeInbox serves f on a loopback port and returns the worker's --server flags.
func startFakeInbox(t *testing.T, f hookverifyv1.InboxServiceServer) []string {
	t.Helper()
	return serveFake(t, func(g *grpc.Server) { hookverifyv1.RegisterInboxServiceServer(g, f) })
}

// serveFake serves what register registers on a loopback port and returns the --server flags
// of a command calling it.
func serveFake(t *testing.T, register func(*grpc.Server)) []string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	register(g)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)
	return []string{"--server", lis.Addr().String()}
}

// runWorkerAsync runs runWorker in the background; the returned function waits for it.
func runWorkerAsync(ctx context.Context, args []string) (wait func(d time.Duration) (err error, finished bool), out *syncbuf.Buffer) {
	out = &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- runWorker(ctx, env{stdin: strings.NewReader(""), stdout: out, stderr: out}, args)
	}()
	return func(d time.Duration) (error, bool) {
		select {
		case err := <-done:
			return err, true
		case <-time.After(d):
			return nil, false
		}
	}, out
}

func waitForFile(t *testing.T, path string, d time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// TestWorkerSettlesTheRunningDeliveryOnShutdown: SIGTERM (the context Main cancels) while the
// command runs stops the command and still reaches the server, with a nack for an immediate
// retry, rather than leaving the lease to expire. (Before, the command was killed outright and
// the nack was sent with the cancelled context, so it never left the worker.) The command did
// not fail: the nack asks for no delay, whatever --retry-after, so that the next worker runs it
// at once.
func TestWorkerSettlesTheRunningDeliveryOnShutdown(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	started := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "30s", "--retry-after", "5m"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("touch %s; sleep 5", started)))
	if !waitForFile(t, started, 10*time.Second) {
		t.Fatalf("the command never started; output %q", out.String())
	}
	cancel() // SIGTERM to the worker
	if _, finished := wait(10 * time.Second); !finished {
		t.Fatal("worker did not stop after SIGTERM")
	}
	acks, nacks, _ := f.snapshot()
	if len(acks) != 0 || len(nacks) != 1 || !strings.Contains(nacks[0], "shutdown") {
		t.Errorf("after SIGTERM during a command: acks %v, nacks %q; want one nack saying the shutdown stopped it (worker output %q)", acks, nacks, out.String())
	}
	f.mu.Lock()
	retryAfters := f.retryAfters
	f.mu.Unlock()
	if len(retryAfters) != 1 || retryAfters[0] != 0 {
		t.Errorf("nacks at shutdown with --retry-after 5m: retry_after %v, want one of 0", retryAfters)
	}
	// On the delivery's last attempt a plain nack dead-letters it: the shutdown gives the
	// attempt back instead.
	if f.givenBackCount() != len(nacks) {
		t.Errorf("%d of %d nacks at shutdown were sent with not_attempted; want all", f.givenBackCount(), len(nacks))
	}
}

// TestWorkerOutlastsATransientExtendFailure: one UNAVAILABLE answer to ExtendLease (a server
// restart, a network blip) while the lease still has time does not stop the command; the next
// extension goes through and the delivery is acked. Only the server saying the lease is gone,
// or the lease running out, stops it. The first extension comes a third into the lease, so that
// the retry, a third later, still comes before the lease ends: here the command outlives its
// first lease, so it is acked only if the retry extended it in time.
func TestWorkerOutlastsATransientExtendFailure(t *testing.T) {
	f := &fakeInbox{extendErr: unavailableOnce("server restarting")}
	remote := startFakeInbox(t, f)
	// Extensions every 1.5 s: the first fails, the second (at 3 s, 1.5 s before the lease would
	// end: time to spare on a busy machine) goes through, and the command ends at 5.25 s.
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "4500ms"}, remote...),
		"--", "sh", "-c", "sleep 5.25; exit 0"))
	if _, finished := wait(20 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	acks, nacks, extends := f.snapshot()
	if len(acks) != 1 || acks[0] != "ok" || len(nacks) != 0 {
		t.Errorf("a 5.25 s command on a 4.5 s lease was killed after one transient ExtendLease error: acks %v, nacks %q, extends %v; output %q", acks, nacks, extends, out.String())
	}
}

// TestWorkerLeaseLostKillsTheWholeCommand: when the lease is lost, the command and the
// processes it started (a shell script's subprocesses) are killed, so none of them does the
// side effect while another worker may run the same delivery.
func TestWorkerLeaseLostKillsTheWholeCommand(t *testing.T) {
	f := &fakeInbox{extendErr: func(int) error {
		return status.Error(codes.FailedPrecondition, "lease lost")
	}}
	remote := startFakeInbox(t, f)
	marker := filepath.Join(t.TempDir(), "side-effect")
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "2s"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("(sleep 2; touch %s) </dev/null >/dev/null 2>&1 & wait", marker)))
	if _, finished := wait(15 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	_, nacks, extends := f.snapshot()
	if len(extends) == 0 {
		t.Fatalf("no ExtendLease was made; output %q", out.String())
	}
	if waitForFile(t, marker, 4*time.Second) {
		t.Errorf("the command's child did its side effect after the worker learnt the lease was lost (nacks %q)", nacks)
	}
}

// TestWorkerRefusesFlagsOutOfRange: durations the server would refuse, or that the worker
// cannot use (a zero visibility made a ticker of zero, which panicked once a delivery was
// leased), are usage errors before anything is leased.
func TestWorkerRefusesFlagsOutOfRange(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	for _, flags := range [][]string{{"--visibility", "0s"}, {"--visibility", "13h"}, {"--retry-after", "24h"},
		{"--retry-after", "-1s"}, {"--timeout", "0s"}, {"--grace", "-1s"}, {"--max-run", "-1s"}, {"--max-run", "200h"}} {
		var out bytes.Buffer
		err := runWorker(context.Background(), env{stdin: strings.NewReader(""), stdout: &out, stderr: &out},
			append(append(append([]string{"--once"}, flags...), remote...), "--", "true"))
		if err != errUsage || !strings.Contains(out.String(), flags[0]) {
			t.Errorf("worker %v: %v, %q; want a usage error naming the flag", flags, err, out.String())
		}
	}
	if f.leases != 0 {
		t.Errorf("%d leases taken with flags out of range", f.leases)
	}
}

// TestWorkerOnceGivesUpOnAServerThatDoesNotAnswer: every call has the --timeout deadline, so a
// server that stops answering does not hang the worker (nor, with a command running, an
// ExtendLease while the lease runs out); with --once it then exits with the error.
func TestWorkerOnceGivesUpOnAServerThatDoesNotAnswer(t *testing.T) {
	f := &fakeInbox{leaseBlock: true}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, _ := runWorkerAsync(ctx, append(append([]string{"--once", "--timeout", "1s"}, remote...), "--", "true"))
	if err, finished := wait(6 * time.Second); !finished {
		t.Error("worker --timeout 1s still waiting for Lease after 6 s: --timeout is ignored")
	} else if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("worker --once with a server that does not answer returned %v, want the lease's deadline error", err)
	}
}

// TestWorkerRetriesATransientAckFailure: a command that succeeded but whose Ack got a
// transient UNAVAILABLE (the lease still valid) is acked again, rather than left to run once
// more after the lease expires. ABORTED (a transaction the database gave up on, a
// serialization conflict) is as transient.
func TestWorkerRetriesATransientAckFailure(t *testing.T) {
	for _, code := range []codes.Code{codes.Unavailable, codes.Aborted} {
		f := &fakeInbox{ackErr: func(n int) error {
			if n == 1 {
				return status.Error(code, "storage unavailable, retry later")
			}
			return nil
		}}
		remote := startFakeInbox(t, f)
		wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "true"))
		err, finished := wait(15 * time.Second)
		if !finished {
			t.Fatalf("ack answered %v once: worker did not finish", code)
		}
		acks, _, _ := f.snapshot()
		if len(acks) != 2 || acks[1] != "ok" || err != nil {
			t.Errorf("ack answered %v, then: acks %v, worker returned %v, output %q; want it acked on the second try", code, acks, err, out.String())
		}
	}
}

// TestWorkerCountsAnAlreadyAckedDeliverySettled: an ack whose answer was lost (UNAVAILABLE,
// or a timeout) and that went through is retried, and the server answers FAILED_PRECONDITION
// with ALREADY_ACKED. The worker reported the delivery not settled ("it runs again once its
// lease ends", which it does not) and `--once` exited 1 for work that was done; a lease lost
// otherwise is still unsettled.
func TestWorkerCountsAnAlreadyAckedDeliverySettled(t *testing.T) {
	acked := status.New(codes.FailedPrecondition, "ack: "+server.AlreadyAckedMessage)
	acked, err := acked.WithDetails(&errdetails.ErrorInfo{Reason: server.AlreadyAckedReason, Domain: server.ErrorDomain})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		second  error
		settled bool
	}{
		{"already acked", acked.Err(), true},
		{"lease lost otherwise", status.Error(codes.FailedPrecondition, "ack: lease lost"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeInbox{ackErr: func(n int) error {
				if n == 1 {
					return status.Error(codes.Unavailable, "the answer was lost")
				}
				return tc.second
			}}
			remote := startFakeInbox(t, f)
			wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "true"))
			err, finished := wait(15 * time.Second)
			if !finished {
				t.Fatal("worker did not finish")
			}
			if settled := err == nil; settled != tc.settled {
				t.Errorf("worker --once returned %v (output %q); want settled %v", err, out.String(), tc.settled)
			}
		})
	}
}

// TestWorkerWaitsOutATransientLeaseFailure: one UNAVAILABLE answer to Lease (a server
// restart) does not end a long-running worker; it leases again and runs the delivery.
func TestWorkerWaitsOutATransientLeaseFailure(t *testing.T) {
	f := &fakeInbox{leaseErr: unavailableOnce("storage unavailable, retry later")}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--idle", "100ms"}, remote...), "--", "true"))
	err, finished := wait(5 * time.Second)
	if finished {
		t.Errorf("worker stopped on one transient Lease error: %v (output %q)", err, out.String())
		return
	}
	cancel()
	wait(5 * time.Second)
	if acks, _, _ := f.snapshot(); len(acks) != 1 {
		t.Errorf("acks %v, want the delivery acked after the retry", acks)
	}
}

// TestWorkerKeepsItsTokenFromTheCommand: the worker's API token (inbox scope: every body of
// its endpoints, and acking work away) is not in the environment of the commands it runs; nor,
// for a worker sharing serve's environment, are the master keys (they unseal every signing
// secret) and the bootstrap token.
func TestWorkerKeepsItsTokenFromTheCommand(t *testing.T) {
	secrets := map[string]string{tokenEnv: "hvt_review_secret_token_value", masterKeyEnv: "review-master-key-value",
		oldMasterKeysEnv: "review-old-master-key-value", bootstrapTokenEnv: "review-bootstrap-token-value"}
	for name, value := range secrets {
		t.Setenv(name, value)
	}
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "sh", "-c", "env"))
	if _, finished := wait(15 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	for name, value := range secrets {
		if strings.Contains(out.String(), value) {
			t.Errorf("the command's environment holds $%s", name)
		}
	}
	if !strings.Contains(out.String(), "HOOKVERIFY_OPERATION_KEY=") {
		t.Errorf("the command ran without the delivery's environment: %q", out.String())
	}
}

// TestWorkerRetryAfterOutOfRangeLeasesNothing: --retry-after above the server's 12 h limit,
// against a real server, is refused before a lease; before, every failed delivery's Nack was
// refused (INVALID_ARGUMENT), the delivery stayed leased, and the worker exited 0.
func TestWorkerRetryAfterOutOfRangeLeasesNothing(t *testing.T) {
	remote, must := startTestServer(t)
	acceptDeliveries(t, must, "r-1")
	code, _, errOut := run(t, "", append(append([]string{"worker", "--once", "--endpoint", "gh", "--retry-after", "24h"}, remote...), "--", "false")...)
	stats := must("", "inbox", "stats")
	if code == 0 && strings.Contains(stats, `"leased"`) {
		t.Errorf("worker --retry-after 24h exited 0, its nack refused (%q), and left the failed delivery leased:\n%s", errOut, stats)
	}
}

// TestInboxCountFlagsOutOfRange: inbox lease --max and inbox dead --limit are checked before
// they are narrowed to the API's int32: a --max of 2^32+1 was sent as 1.
func TestInboxCountFlagsOutOfRange(t *testing.T) {
	f := &recordingLeases{}
	remote := startFakeInbox(t, f)
	for _, args := range [][]string{{"lease", "--max", "4294967297"}, {"lease", "--max", "0"}, {"dead", "--limit", "4294967297"}, {"dead", "--limit", "1001"}} {
		if code, _, errOut := run(t, "", append(append([]string{"inbox"}, args...), remote...)...); code != 2 || !strings.Contains(errOut, args[1]) {
			t.Errorf("inbox %v: exit %d, %q; want a usage error naming the flag", args, code, errOut)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.max) != 0 {
		t.Errorf("leases sent with --max out of range: %v", f.max)
	}
}

type recordingLeases struct {
	hookverifyv1.UnimplementedInboxServiceServer
	mu  sync.Mutex
	max []int32
}

func (r *recordingLeases) Lease(_ context.Context, req *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	r.mu.Lock()
	r.max = append(r.max, req.GetMaxDeliveries())
	r.mu.Unlock()
	if m := req.GetMaxDeliveries(); m < 0 || m > 100 {
		return nil, status.Error(codes.InvalidArgument, "max_deliveries must be between 0 and 100")
	}
	return &hookverifyv1.LeaseResponse{}, nil
}

// TestWorkerGivesTheCommandTheRequest: besides the body on standard input and the identity,
// the command gets the request's method, URL and headers (repeated ones in order), so that it
// can tell, say, which GitHub event it was sent.
func TestWorkerGivesTheCommandTheRequest(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once"}, remote...), "--", "sh", "-c",
		`printf '%s|%s|%s|%s|' "$HOOKVERIFY_OPERATION_KEY" "$HOOKVERIFY_METHOD" "$HOOKVERIFY_URL" "$HOOKVERIFY_HEADERS"; cat`))
	if err, finished := wait(15 * time.Second); !finished || err != nil {
		t.Fatalf("worker: finished %v, %v", finished, err)
	}
	want := `op_1|POST|https://hooks.example.com/ep?tenant=7|[{"name":"X-GitHub-Event","value":"push"},{"name":"X-GitHub-Event","value":"a \"second\""}]|{"id":"evt_1"}`
	if !strings.Contains(out.String(), want) {
		t.Errorf("the command printed %q, want %q", out.String(), want)
	}
}

// hangingExtend is a fakeInbox whose ExtendLease never answers: a server that is overloaded,
// or a network path that drops packets without a reset, so that the call only ends at its
// deadline.
type hangingExtend struct{ *fakeInbox }

func (h hangingExtend) ExtendLease(ctx context.Context, _ *hookverifyv1.ExtendLeaseRequest) (*hookverifyv1.ExtendLeaseResponse, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestWorkerKillsTheCommandWhenAHangingExtensionOutlivesTheLease: the README promises that a
// command whose lease runs out while the server cannot be reached is killed, "since another
// worker may have the delivery by then". An ExtendLease call that hangs was given the whole
// --timeout (30 s) whatever the lease had left, so with --visibility 3s the command ran on for
// half a minute after its lease ended, side effects included, while the server handed the
// delivery to another worker: the same event worked twice at once.
func TestWorkerKillsTheCommandWhenAHangingExtensionOutlivesTheLease(t *testing.T) {
	f := hangingExtend{&fakeInbox{}}
	remote := startFakeInbox(t, f)

	marker := filepath.Join(t.TempDir(), "side-effect")
	// The lease ends 3 s after it was taken; the side effect comes at 6 s.
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "3s", "--timeout", "30s"},
		remote...), "--", "sh", "-c", fmt.Sprintf("sleep 6; touch %s", marker)))
	if waitForFile(t, marker, 9*time.Second) {
		t.Errorf("the command did its side effect 3 s after its lease ended, while the extension hung (output %q)", out.String())
	}
	if _, finished := wait(40 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	if acks, _, _ := f.snapshot(); len(acks) != 0 {
		t.Errorf("acks %v for a delivery whose lease was lost", acks)
	}
}

// slowLease is a fakeInbox whose Lease answers only after delay, whatever its caller's
// deadline: an overloaded server whose answer comes after the lease it grants has run out.
type slowLease struct {
	*fakeInbox
	delay time.Duration
}

func (s slowLease) Lease(ctx context.Context, req *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	time.Sleep(s.delay)
	return s.fakeInbox.Lease(context.WithoutCancel(ctx), req)
}

// TestWorkerDoesNotRunADeliveryWhoseLeaseEndedBeforeTheAnswer: a lease answered after its
// visibility timeout has passed is no lease at all (the delivery is leasable again, perhaps
// already another worker's). The Lease call was given the whole --timeout, so the worker ran
// the command for such a delivery anyway, side effects included, until the first extension
// found the lease gone.
func TestWorkerDoesNotRunADeliveryWhoseLeaseEndedBeforeTheAnswer(t *testing.T) {
	f := slowLease{&fakeInbox{}, 2500 * time.Millisecond}
	remote := startFakeInbox(t, f)

	marker := filepath.Join(t.TempDir(), "side-effect")
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "1s", "--timeout", "30s"},
		remote...), "--", "sh", "-c", fmt.Sprintf("touch %s", marker)))
	if _, finished := wait(40 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	if waitForFile(t, marker, 100*time.Millisecond) {
		t.Errorf("the command ran for a delivery whose 1 s lease was answered after 2.5 s (output %q)", out.String())
	}
}

// leaseDuringShutdown is a fakeInbox whose first Lease is still being answered when the
// worker is told to stop: the server has leased the delivery (its transaction committed)
// and its answer is on the way.
type leaseDuringShutdown struct {
	*fakeInbox
	once           *sync.Once
	inFlight, done chan struct{}
}

func (l leaseDuringShutdown) Lease(ctx context.Context, req *hookverifyv1.LeaseRequest) (*hookverifyv1.LeaseResponse, error) {
	l.once.Do(func() { close(l.inFlight) })
	time.Sleep(300 * time.Millisecond)
	resp, err := l.fakeInbox.Lease(context.WithoutCancel(ctx), req)
	if len(resp.GetDeliveries()) > 0 {
		close(l.done)
	}
	return resp, err
}

// TestWorkerGivesBackADeliveryLeasedAsItStops: SIGTERM while a Lease call is on its way must
// not strand what the server leased. The worker cancelled the call and exited: the delivery it
// had been granted stayed leased, unrun, for the whole --visibility (up to 12 h), with an
// attempt spent (on its last attempt it went to the dead letters without ever running). The
// README promises that a stopping worker settles its delivery; one it never ran is given back
// at once, for an immediate retry, and its command is not started.
func TestWorkerGivesBackADeliveryLeasedAsItStops(t *testing.T) {
	f := leaseDuringShutdown{&fakeInbox{}, &sync.Once{}, make(chan struct{}), make(chan struct{})}
	remote := startFakeInbox(t, f)
	marker := filepath.Join(t.TempDir(), "ran")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "1h"}, remote...),
		"--", "sh", "-c", fmt.Sprintf("touch %s", marker)))
	<-f.inFlight
	cancel() // SIGTERM to the worker while its Lease is answered
	if _, finished := wait(10 * time.Second); !finished {
		t.Fatal("worker did not stop after SIGTERM")
	}
	<-f.done // the server has leased the delivery
	time.Sleep(200 * time.Millisecond)
	acks, nacks, _ := f.snapshot()
	// Its nack says it never ran: a command started and stopped at once could have done part
	// of its side effects, and would be nacked as stopped.
	if len(acks) != 0 || len(nacks) != 1 || !strings.Contains(nacks[0], errNotRun.Error()) {
		t.Errorf("the server leased a delivery as the worker stopped: acks %v, nacks %q; want it nacked for an immediate retry, saying %q (output %q)", acks, nacks, errNotRun, out.String())
	}
	if f.givenBackCount() != len(nacks) {
		t.Errorf("%d of %d nacks of a delivery never run were sent with not_attempted; want all", f.givenBackCount(), len(nacks))
	}
	if waitForFile(t, marker, 100*time.Millisecond) {
		t.Errorf("the worker started the command for a delivery leased after its SIGTERM (output %q)", out.String())
	}
}

// TestTruncateKeepsValidUTF8: a nack's error is cut between characters and made valid UTF-8,
// or the nack could not be sent and the delivery would stay unsettled.
func TestTruncateKeepsValidUTF8(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 1024, "short"},
		{strings.Repeat("a", 1023) + "é", 1024, strings.Repeat("a", 1023)},
		{"exit status 1 from /opt/\xff/run", 1024, "exit status 1 from /opt/\uFFFD/run"},
		{"ééé", 5, "éé"},
	} {
		got := truncate(tc.in, tc.n)
		if got != tc.want || !utf8.ValidString(got) || len(got) > tc.n {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

// TestWorkerKillsTheCommandWhenItsLateLeaseEnds: a lease answered late (an overloaded
// database: the lease transaction waited) has less than --visibility left when the command
// starts. The extensions were timed from the command's start, every third of the visibility,
// and the lease's end was only checked then: with the database still failing extensions
// (UNAVAILABLE at once), the command ran on past its lease until the next tick, a third of the
// visibility later, while the server could hand the delivery to another worker: the same
// event worked twice at once.
func TestWorkerKillsTheCommandWhenItsLateLeaseEnds(t *testing.T) {
	f := slowLease{&fakeInbox{extendErr: func(int) error {
		return status.Error(codes.Unavailable, "storage unavailable, retry later")
	}}, 3 * time.Second}
	remote := startFakeInbox(t, f)
	marker := filepath.Join(t.TempDir(), "side-effect")
	// Leased at 0 for 6 s, answered at 3 s; the command's side effect comes at 6.5 s, after
	// the lease ended (its old first check was at 5 s, its second at 7 s).
	start := time.Now()
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "6s", "--timeout", "30s"},
		remote...), "--", "sh", "-c", fmt.Sprintf("sleep 3.5; touch %s", marker)))
	if waitForFile(t, marker, 9*time.Second) {
		t.Errorf("the command did its side effect %v after its lease was taken, which ended at 6 s, while the extensions failed (output %q)",
			time.Since(start).Round(100*time.Millisecond), out.String())
	}
	if _, finished := wait(20 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	if acks, _, _ := f.snapshot(); len(acks) != 0 {
		t.Errorf("acks %v for a delivery whose lease ended", acks)
	}
}

// TestWorkerExtendsALateLeaseInTime: a lease answered late has less than the visibility left;
// the first extension was timed a third of the visibility after the command's start, past the
// lease's end, so the worker gave up on a lease the server would have extended and killed a
// command that was doing fine, to be run again from the start by another worker.
func TestWorkerExtendsALateLeaseInTime(t *testing.T) {
	f := slowLease{&fakeInbox{}, 2500 * time.Millisecond}
	remote := startFakeInbox(t, f)
	// Leased at 0 for 3 s, answered at 2.5 s: the old first extension came at 3.5 s.
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "3s", "--timeout", "30s"},
		remote...), "--", "sh", "-c", "sleep 2; exit 0"))
	if _, finished := wait(20 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	acks, nacks, extends := f.snapshot()
	if len(acks) != 1 || acks[0] != "ok" || len(nacks) != 0 {
		t.Errorf("a command whose lease the server would have extended was not acked: acks %v, nacks %q, extends %v; output %q", acks, nacks, extends, out.String())
	}
}

// TestWorkerAcksACommandThatFinishedDuringAHangingExtension: the extension call runs in the
// loop that waits for the command, so a command that exits while the call hangs is only seen
// once the call ends. When it ended at the lease's end, the worker reported the lease lost and
// settled nothing, though the command had finished well within its lease: the delivery, its
// work done, ran again once the lease ran out. The ack is the server's to refuse if the lease
// is really gone.
func TestWorkerAcksACommandThatFinishedDuringAHangingExtension(t *testing.T) {
	f := hangingExtend{&fakeInbox{}}
	remote := startFakeInbox(t, f)
	// Leased for 3 s: the extension at 1 s hangs until 3 s; the command ends at 1.5 s.
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "3s", "--timeout", "30s"},
		remote...), "--", "sh", "-c", "sleep 1.5; exit 0"))
	if _, finished := wait(20 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	if acks, nacks, _ := f.snapshot(); len(acks) != 1 || acks[0] != "ok" || len(nacks) != 0 {
		t.Errorf("a command that finished within its lease was not acked: acks %v, nacks %q; output %q", acks, nacks, out.String())
	}
}

// TestWorkerOnceFailsWhenALeaseIsLost: --once promises exit 1 when "a delivery could not be
// acked or nacked". A delivery whose lease was lost while its command ran (the server refused
// the extension: expired and perhaps another worker's, or gone) was neither, and runs again;
// the run did not complete it, yet the worker exited 0, and a cron job reported success. It
// must fail, with a line naming the delivery.
func TestWorkerOnceFailsWhenALeaseIsLost(t *testing.T) {
	for _, code := range []codes.Code{codes.FailedPrecondition, codes.NotFound} {
		t.Run(code.String(), func(t *testing.T) {
			f := &fakeInbox{extendErr: func(int) error { return status.Error(code, "lease lost") }}
			remote := startFakeInbox(t, f)
			wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "1500ms"}, remote...),
				"--", "sleep", "3"))
			err, finished := wait(15 * time.Second)
			if !finished {
				t.Fatal("worker did not finish")
			}
			if acks, nacks, _ := f.snapshot(); len(acks) != 0 || len(nacks) != 0 {
				t.Errorf("acks %v, nacks %q for a delivery whose lease was lost", acks, nacks)
			}
			if err == nil {
				t.Errorf("worker --once exited 0 after the lease of its delivery was lost (output %q)", out.String())
			}
			if !strings.Contains(out.String(), "delivery inb_1 not settled") {
				t.Errorf("no line says delivery inb_1 was not settled: output %q", out.String())
			}
		})
	}
}

// TestWorkerOnceFailsWhenTheLeaseEnds: the same when the lease ran out while the server could
// not extend it (the command killed at the lease's end).
func TestWorkerOnceFailsWhenTheLeaseEnds(t *testing.T) {
	f := hangingExtend{&fakeInbox{}}
	remote := startFakeInbox(t, f)
	wait, out := runWorkerAsync(context.Background(), append(append([]string{"--once", "--visibility", "1500ms", "--timeout", "30s"},
		remote...), "--", "sleep", "5"))
	err, finished := wait(20 * time.Second)
	if !finished {
		t.Fatal("worker did not finish")
	}
	if err == nil {
		t.Errorf("worker --once exited 0 after its delivery's lease ended under the command (output %q)", out.String())
	}
	if !strings.Contains(out.String(), "delivery inb_1 not settled") {
		t.Errorf("no line says delivery inb_1 was not settled: output %q", out.String())
	}
}

// TestWorkerSaysWhenAnEndpointDoesNotExist: a mistyped --endpoint leases nothing, as an empty
// inbox does; the worker says so once per id, rather than wait for ever without a word.
func TestWorkerSaysWhenAnEndpointDoesNotExist(t *testing.T) {
	f := &fakeInbox{unknown: []string{"wrok"}}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--endpoint", "wrok", "--idle", "10ms"}, remote...), "--", "true"))
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		leases := f.leases
		f.mu.Unlock()
		if leases >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if _, finished := wait(5 * time.Second); !finished {
		t.Fatal("worker did not stop")
	}
	if n := strings.Count(out.String(), "--endpoint wrok names no endpoint"); n != 1 {
		t.Errorf("the unknown endpoint was reported %d times over several empty leases, want once: %q", n, out.String())
	}
}

// TestWorkerMaxRunStopsAHungCommand: a command that hangs keeps extending its lease, so its
// delivery was never retried nor dead-lettered, and the worker, one delivery at a time, took
// nothing else. With --max-run the command gets SIGTERM, then SIGKILL after --grace, and the
// delivery is nacked as failed: its attempt counts (this is the delivery's run failing, not
// the worker stopping).
func TestWorkerMaxRunStopsAHungCommand(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The command ignores SIGTERM, so only the SIGKILL after --grace ends it.
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "30s", "--max-run", "300ms", "--grace", "200ms"}, remote...),
		"--", "sh", "-c", "trap '' TERM; sleep 30"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, nacks, _ := f.snapshot(); len(nacks) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no nack 10 s after a 300ms --max-run; worker output %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if _, finished := wait(10 * time.Second); !finished {
		t.Fatal("worker did not stop")
	}
	acks, nacks, _ := f.snapshot()
	if len(acks) != 0 || !strings.Contains(nacks[0], "--max-run 300ms") {
		t.Errorf("acks %v, nacks %q; want a nack saying the command ran longer than --max-run", acks, nacks)
	}
	if f.givenBackCount() != 0 && len(nacks) == 1 {
		t.Errorf("the overrun's nack gave its attempt back; a hung command must spend its attempts")
	}
}

// TestWorkerMaxRunNacksACommandThatExitsZeroOnSIGTERM: README says --max-run "gives it SIGTERM
// after D, SIGKILL after --grace, and nacks its delivery as failed, spending the attempt". A
// command that handles SIGTERM by exiting 0 (a graceful shutdown handler) has not done its
// work: acked, the delivery was lost.
func TestWorkerMaxRunNacksACommandThatExitsZeroOnSIGTERM(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "30s", "--max-run", "300ms", "--grace", "5s"}, remote...),
		"--", "sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.05; done"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if acks, nacks, _ := f.snapshot(); len(acks)+len(nacks) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not settled 10 s after a 300ms --max-run; worker output %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if _, finished := wait(10 * time.Second); !finished {
		t.Fatal("worker did not stop")
	}
	acks, nacks, _ := f.snapshot()
	if len(acks) != 0 || len(nacks) != 1 || !strings.Contains(nacks[0], "--max-run 300ms") {
		t.Errorf("acks %v, nacks %q; want one nack saying the command ran longer than --max-run", acks, nacks)
	}
	if f.givenBackCount() != 0 {
		t.Errorf("the overrun's nack gave its attempt back")
	}
}

// TestWorkerShutdownBeforeMaxRunStillAcksExitZero: a command stopped by the worker's shutdown
// first, which exits 0 within --grace, is acked as on any shutdown, even if --max-run passes
// meanwhile (the exit 0 answers the shutdown's SIGTERM, not the overrun's).
func TestWorkerShutdownBeforeMaxRunStillAcksExitZero(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	started := t.TempDir() + "/started"
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "30s", "--max-run", "600ms", "--grace", "5s"}, remote...),
		"--", "sh", "-c", "trap 'sleep 1; exit 0' TERM; touch "+started+"; while :; do sleep 0.05; done"))
	if !waitForFile(t, started, 10*time.Second) {
		t.Fatalf("command did not start; output %q", out.String())
	}
	cancel()
	if _, finished := wait(15 * time.Second); !finished {
		t.Fatal("worker did not stop")
	}
	if acks, nacks, _ := f.snapshot(); len(acks) != 1 || len(nacks) != 0 {
		t.Errorf("acks %v, nacks %q; want one ack", acks, nacks)
	}
}

// TestWorkerMaxRunThenShutdownSpendsTheAttempt: README says --max-run "gives it SIGTERM
// after D, SIGKILL after --grace, and nacks its delivery as failed, spending the attempt". A
// worker shutdown that comes after the overrun's SIGTERM, while the command is still stopping
// (within --grace), does not make the overrun a shutdown: the run was cut for running too long,
// and a command that always hangs must still use its attempts up, not have one given back
// whenever a deploy falls within its grace.
func TestWorkerMaxRunThenShutdownSpendsTheAttempt(t *testing.T) {
	f := &fakeInbox{}
	remote := startFakeInbox(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	termed := t.TempDir() + "/termed"
	wait, out := runWorkerAsync(ctx, append(append([]string{"--visibility", "30s", "--max-run", "300ms", "--grace", "5s"}, remote...),
		"--", "sh", "-c", "trap 'touch "+termed+"; sleep 1; exit 0' TERM; while :; do sleep 0.05; done"))
	if !waitForFile(t, termed, 10*time.Second) {
		t.Fatalf("the command got no SIGTERM from --max-run; output %q", out.String())
	}
	cancel() // the worker's shutdown, while the overrun command is still stopping
	if _, finished := wait(15 * time.Second); !finished {
		t.Fatal("worker did not stop")
	}
	acks, nacks, _ := f.snapshot()
	if len(acks) != 0 || len(nacks) != 1 || !strings.Contains(nacks[0], "--max-run 300ms") {
		t.Errorf("acks %v, nacks %q; want one nack saying the command ran longer than --max-run", acks, nacks)
	}
	if f.givenBackCount() != 0 {
		t.Errorf("the overrun's nack gave its attempt back because a shutdown came during its --grace")
	}
}
