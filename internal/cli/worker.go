package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// runWorker leases deliveries and runs a command for each: the raw body on standard input, the
// delivery's identity in the environment (HOOKVERIFY_OPERATION_KEY is the idempotency key for
// the command's side effects). Exit status 0 acks; anything else nacks for a later attempt. The
// lease is extended while the command runs, so long jobs are not handed to another worker; if
// it is lost all the same, the command and every process it started are killed, since another
// worker may be running the delivery by then.
//
// A server that is down or overloaded is waited out: leases, extensions, acks and nacks that
// fail that way are tried again (acks and nacks while the lease lasts). On SIGTERM or SIGINT a
// running command gets SIGTERM, then SIGKILL after --grace; its delivery is acked if it exited
// 0 and nacked for an immediate retry otherwise, its attempt given back (not_attempted), before
// the worker exits. A second SIGTERM or SIGINT stops the waiting: the command is killed at
// once, the calls under way are cut, and its delivery gets one last short try to be settled.
func runWorker(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "worker")
	var r remoteFlags
	var f filterFlags
	r.register(fs)
	f.register(fs)
	visibility := fs.Duration("visibility", server.DefaultVisibility, "lease duration (1s to 12h), extended while the command runs")
	retryAfter := fs.Duration("retry-after", time.Minute, "delay before a failed delivery is retried (0 to 12h)")
	idle := fs.Duration("idle", time.Second, "wait when the inbox is empty")
	grace := fs.Duration("grace", 10*time.Second, "on SIGTERM or SIGINT, how long a running command has after its own SIGTERM before it is killed (a second signal kills it at once)")
	maxRun := fs.Duration("max-run", 0, "the longest a command may run (0: no limit); then it gets SIGTERM, SIGKILL after --grace, and its delivery is nacked as failed")
	once := fs.Bool("once", false, "exit when the inbox has nothing leasable instead of waiting; exit 1 if the server fails or a delivery could not be acked or nacked (its lease lost included)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp // help printed: exit 0, as for every other command
		}
		return errUsage
	}
	command := fs.Args()
	if len(command) > 0 && command[0] == "--" {
		command = command[1:]
	}
	if len(command) == 0 {
		fmt.Fprintln(e.stderr, "usage: hookverify worker [flags] -- COMMAND [ARGS...]")
		return errUsage
	}
	// Every flag out of range is named, then the worker stops.
	if err := cmp.Or(
		inRange(e, "visibility", *visibility, time.Second, server.MaxVisibility),
		inRange(e, "retry-after", *retryAfter, 0, server.MaxVisibility),
		inRange(e, "idle", *idle, 0, time.Hour),
		inRange(e, "grace", *grace, 0, server.MaxVisibility),
		inRange(e, "max-run", *maxRun, 0, 7*24*time.Hour),
		inRange(e, "timeout", r.timeout, time.Millisecond, time.Hour),
	); err != nil {
		return err
	}
	// A command that cannot be started fails every delivery alike: leased and nacked one
	// after another, each would spend its attempts and end among the dead letters unrun.
	if _, err := exec.LookPath(command[0]); err != nil {
		return fmt.Errorf("command: %w", err)
	}
	conn, err := r.dialGated()
	if err != nil {
		return err
	}
	defer conn.Close()
	// hard ends at the second signal, or when the worker returns.
	hard, endHard := context.WithCancel(secondSignal(ctx))
	defer endHard()
	w := &worker{e: e, inbox: hookverifyv1.NewInboxServiceClient(conn.GRPC()), command: command,
		filter: f, visibility: *visibility, retryAfter: *retryAfter, grace: *grace, maxRun: *maxRun, callTimeout: r.timeout,
		hard: hard}
	unsettled := 0
	for ctx.Err() == nil {
		d, deadline, err := w.lease(ctx, *once)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("lease: %w", err)
		}
		if d == nil {
			if *once {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(*idle):
			}
			continue
		}
		var runErr error
		var stopped bool
		if ctx.Err() != nil {
			// Leased while the worker was told to stop (the call was answered after the
			// signal): given back at once, for an immediate retry, rather than started only to
			// be stopped, or left leased for the rest of its lease.
			runErr, stopped = errNotRun, true
		} else {
			runErr, stopped = w.run(ctx, d, &deadline)
		}
		if err := w.settle(d, deadline, runErr, stopped); err != nil {
			unsettled++
			why := "it runs again once its lease ends"
			if errors.Is(err, errLeaseLost) {
				why = "its lease was lost: it runs again, perhaps on another worker already"
			}
			fmt.Fprintf(w.e.stderr, "worker: delivery %s not settled (%s): %v\n", d.GetInboxId(), why, err)
		}
		if errors.Is(runErr, errNotStarted) {
			// It would fail every delivery alike (run): stop, as at start.
			return fmt.Errorf("command: %w", runErr)
		}
	}
	if *once && unsettled > 0 {
		return fmt.Errorf("%d deliveries could not be acked or nacked", unsettled)
	}
	return nil
}

type worker struct {
	e                                          env
	inbox                                      hookverifyv1.InboxServiceClient
	command                                    []string
	filter                                     filterFlags
	visibility, retryAfter, grace, callTimeout time.Duration
	// maxRun bounds a command's run (0: none): a command that hangs keeps extending its lease,
	// so without it the delivery is never retried nor dead-lettered, and the worker takes
	// nothing else.
	maxRun time.Duration
	// warned holds the --endpoint ids already reported as naming no endpoint.
	warned map[string]bool
	// hard ends at the worker's second SIGTERM or SIGINT (ctx, at the first): the operator
	// wants it to stop waiting, for a command's --grace or for a server.
	hard context.Context
}

// lastCallBound bounds the one call a delivery still gets to be settled after the second
// signal: enough for a server that answers, short for one that does not.
const lastCallBound = time.Second

// warnUnknown says, once per id, that an --endpoint names no endpoint: to the worker, an
// empty inbox and a mistyped id look alike, and it would wait for ever without a word.
func (w *worker) warnUnknown(ids []string) {
	for _, id := range ids {
		if w.warned[id] {
			continue
		}
		if w.warned == nil {
			w.warned = map[string]bool{}
		}
		w.warned[id] = true
		fmt.Fprintf(w.e.stderr, "worker: --endpoint %s names no endpoint (a typo, or not created yet)\n", id)
	}
}

var (
	errLeaseLost = errors.New("lease lost while the command ran")
	errNotRun    = errors.New("not run: leased as the worker was stopping")
	// errNotStarted: the command could not be started for a reason of the worker's (run).
	errNotStarted = errors.New("the command could not be started")
)

// transient reports whether a failed inbox call may succeed if made again: the server or its
// storage is down or overloaded, or the call ran out of time.
func transient(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Aborted:
		return true
	}
	return false
}

// backoff is the wait before attempt n+1 of a call: jittered, doubling from 100 ms to 5 s.
func backoff(n int) time.Duration {
	ceiling := 5 * time.Second
	if n < 6 {
		ceiling = 100 * time.Millisecond << n
	}
	return ceiling/2 + rand.N(ceiling/2)
}

// sleep waits d, or less if ctx ends first; it reports whether it waited the whole time.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// lease leases at most one delivery, and returns it (nil when none is leasable) with the time
// its lease ends by the worker's clock: counted from before the call, so never later than the
// server's. Transient failures are tried again until ctx ends, unless once is set.
func (w *worker) lease(ctx context.Context, once bool) (*hookverifyv1.InboxDelivery, time.Time, error) {
	req := &hookverifyv1.LeaseRequest{EndpointIds: w.filter.endpoints, DedupeScopes: w.filter.scopes, MaxDeliveries: 1,
		VisibilityTimeout: durationpb.New(w.visibility)}
	for attempt := 1; ; attempt++ {
		start := time.Now()
		// An answer that comes after the visibility timeout grants a lease that has already
		// ended (the delivery may be another worker's by then): the call gets no longer.
		// The worker's shutdown does not cut the call short at once: the server may have
		// leased a delivery already, its answer on the way, and abandoned, that delivery would
		// wait out its whole lease unrun, an attempt spent (on its last attempt it would go
		// to the dead letters never run). The call gets --grace to answer, as a running
		// command does, and what it leases is given back (runWorker); a second signal cuts
		// it at once.
		callCtx, cancel := context.WithTimeout(w.hard, min(w.callTimeout, w.visibility))
		stopCall := context.AfterFunc(ctx, func() { time.AfterFunc(w.grace, cancel) })
		resp, err := w.inbox.Lease(callCtx, req)
		stopCall()
		cancel()
		switch {
		case err == nil && len(resp.GetDeliveries()) == 0:
			w.warnUnknown(resp.GetUnknownEndpointIds())
			return nil, time.Time{}, nil
		case err == nil:
			return resp.GetDeliveries()[0], start.Add(w.visibility), nil
		case ctx.Err() != nil, once, !transient(err):
			return nil, time.Time{}, err
		}
		fmt.Fprintf(w.e.stderr, "worker: lease: %v (trying again)\n", err)
		if !sleep(ctx, backoff(attempt)) {
			return nil, time.Time{}, ctx.Err()
		}
	}
}

// run runs the command for d, extending the lease when a third of it has passed (a third of the
// visibility timeout later after an extension that failed transiently) and moving *deadline on
// with each extension. It returns the command's failure (nil: exit 0) and whether the worker's
// shutdown stopped it, or the command could not start for a reason of the worker's
// (errNotStarted): either way the delivery's attempt is to be given back.
//
// The extensions are timed from the lease, not from the command's start, and the command is
// killed when the lease ends unextended: a lease answered late (a slow database) has less than
// the visibility timeout left when the command starts, and timed from the start the first
// extension came after the lease had ended, so a command the server would have kept was
// killed, or, while extensions failed, the lease's end was noticed only at the next one, a
// third of the visibility timeout later, the command still running while the server could
// hand the delivery to another worker.
func (w *worker) run(ctx context.Context, d *hookverifyv1.InboxDelivery, deadline *time.Time) (runErr error, stopped bool) {
	cmd := exec.Command(w.command[0], w.command[1:]...)
	cmd.Stdin = bytes.NewReader(d.GetBody())
	cmd.Stdout, cmd.Stderr = w.e.stdout, w.e.stderr
	cmd.Env = commandEnv(d)
	// The command's own process group, so that stopping it stops whatever it started too.
	cmd.SysProcAttr = ownProcessGroup()
	// A process the command left running with its output open must not hold the worker.
	cmd.WaitDelay = time.Second
	if err := cmd.Start(); err != nil {
		if commandUnstartable(err) {
			// Not the delivery's failure, and the same for every one: nacked, each spent an
			// attempt, on its last one to the dead letters unrun. It is given back as when
			// stopped, and the worker stops (runWorker), as it does at start.
			return fmt.Errorf("%w: %w", errNotStarted, err), true
		}
		return err, false
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		// ErrWaitDelay means the command exited 0 but a process it left running still held
		// a pipe (the rest of a body it did not read): its work is done, and nacked it would
		// be done again.
		if errors.Is(err, exec.ErrWaitDelay) {
			err = nil
		}
		done <- err
	}()
	// due is when the next extension is due: a third into the lease.
	due := func() time.Duration { return time.Until(deadline.Add(-2 * w.visibility / 3)) }
	extendTimer := time.NewTimer(due())
	defer extendTimer.Stop()
	leaseEnd := time.NewTimer(time.Until(*deadline))
	defer leaseEnd.Stop()
	var overran bool
	var overrun <-chan time.Time
	if w.maxRun > 0 {
		timer := time.NewTimer(w.maxRun)
		defer timer.Stop()
		overrun = timer.C
	}
	// finished settles the command's end. An overrun stays one if the worker's shutdown comes
	// while the command is stopping (within --grace): the run was cut for running too long, and
	// its attempt is spent, or a command that always hangs kept an attempt at every deploy.
	finished := func(err error) (error, bool) {
		switch {
		case overran && err != nil:
			err = fmt.Errorf("ran longer than --max-run %s: %w", w.maxRun, err)
		case overran:
			// Stopped before it finished: exit status 0 after its SIGTERM (a graceful shutdown
			// handler) does not say its work was done, and acked, the delivery would be lost.
			err = fmt.Errorf("ran longer than --max-run %s: stopped (exit status 0 after SIGTERM)", w.maxRun)
		case stopped && err != nil:
			err = fmt.Errorf("stopped by the worker's shutdown: %w", err)
		}
		return err, stopped && !overran
	}
	// exited reports the command's end when it has already come: when it coincides with the
	// lease's end, an extension's refusal or --max-run, a command that finished within its
	// lease is settled (the server refuses the ack if the lease is really gone) rather than
	// counted as lost, its work done and then done again.
	exited := func() (err error, ok bool) {
		select {
		case err := <-done:
			return err, true
		default:
			return nil, false
		}
	}
	// An extension call runs beside this loop, not in it: one that hangs (up to the lease's
	// end) held back the worker's shutdown, the command's SIGTERM coming only when the call
	// ended, by when the lease was taken for lost and the command killed without its
	// --grace; and it held back --max-run, the SIGKILL after --grace and the second signal.
	// A call under way when run returns is cut, and waited for.
	type extension struct {
		until time.Time
		err   error
	}
	var extending chan extension
	extendCtx, cancelExtend := context.WithCancel(w.hard)
	defer func() {
		cancelExtend()
		if extending != nil {
			<-extending
		}
	}()
	stopping := ctx.Done()
	cut := w.hard.Done()
	var kill <-chan time.Time
	var killTimer *time.Timer
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	// terminate asks the command to stop, and has it killed after --grace (once).
	terminate := func() {
		signalGroup(cmd.Process, syscall.SIGTERM)
		if killTimer == nil {
			killTimer = time.NewTimer(w.grace)
			kill = killTimer.C
		}
	}
	for {
		select {
		case err := <-done:
			return finished(err)
		case <-stopping:
			stopping, stopped = nil, true
			terminate()
		case <-cut:
			// The worker's second signal: the command is not waited for any longer.
			cut, stopped = nil, true
			signalGroup(cmd.Process, syscall.SIGKILL)
		case <-overrun:
			if runErr, ok := exited(); ok {
				return finished(runErr) // it ended on its own, within --max-run
			}
			// Stopped by the worker's shutdown first, its exit 0 acks as on any shutdown.
			overrun, overran = nil, !stopped
			terminate()
		case <-kill:
			signalGroup(cmd.Process, syscall.SIGKILL)
		case <-extendTimer.C:
			// A stopping worker keeps its lease while the command finishes.
			ch, current := make(chan extension, 1), *deadline
			extending = ch
			go func() {
				until, err := w.extend(extendCtx, d, current)
				ch <- extension{until, err}
			}()
		case x := <-extending:
			extending = nil
			if x.err != nil {
				if runErr, ok := exited(); ok {
					return finished(runErr)
				}
				signalGroup(cmd.Process, syscall.SIGKILL)
				<-done
				return fmt.Errorf("%w: %w", errLeaseLost, x.err), stopped
			}
			if x.until.After(*deadline) {
				*deadline = x.until
				extendTimer.Reset(due())
				leaseEnd.Reset(time.Until(*deadline))
			} else {
				extendTimer.Reset(w.visibility / 3) // failed transiently: tried again
			}
		case <-leaseEnd.C:
			if runErr, ok := exited(); ok {
				return finished(runErr)
			}
			signalGroup(cmd.Process, syscall.SIGKILL)
			<-done
			// Wrapped on one line: the worker's log is read line by line (errors.Join made two).
			return fmt.Errorf("%w: the lease ended while the server could not extend it", errLeaseLost), stopped
		}
	}
}

// commandUnstartable reports whether the command failed to start for a reason of the
// worker's, the same for every delivery: the command, found at start, gone since (a deploy
// removing or replacing it), no longer executable, or being written (ETXTBSY); or the worker
// out of file descriptors for its pipes (EMFILE, ENFILE), of processes to fork (EAGAIN: a
// container's pids limit) or of memory. Any other failure to start may be the delivery's own
// (its environment too large for exec, E2BIG, or holding NUL), and fails the delivery as before.
func commandUnstartable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ETXTBSY) || errors.Is(err, syscall.ENOEXEC) ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.EAGAIN) ||
		errors.Is(err, syscall.ENOMEM)
}

// secretEnvs are the environment variables of hookverify's own secrets, kept from the command:
// the worker's API token, and, for a worker sharing serve's environment (one container, one
// env file), the master keys, which unseal every signing secret, and the bootstrap token.
var secretEnvs = []string{tokenEnv, masterKeyEnv, oldMasterKeysEnv, bootstrapTokenEnv}

// commandEnv is the command's environment: the worker's own, without hookverify's secrets
// (secretEnvs: the API token could read and ack every delivery of its endpoints), and the
// delivery's.
func commandEnv(d *hookverifyv1.InboxDelivery) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(secretEnvs, name) {
			env = append(env, kv)
		}
	}
	type header struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	headers := make([]header, 0, len(d.GetHeaders()))
	for _, h := range d.GetHeaders() {
		headers = append(headers, header{h.GetName(), h.GetValue()})
	}
	headersJSON, _ := json.Marshal(headers) // strings only: cannot fail
	return append(env,
		"HOOKVERIFY_OPERATION_KEY="+d.GetOperationKey(),
		"HOOKVERIFY_EVENT_ID="+d.GetEventId(),
		"HOOKVERIFY_ENDPOINT_ID="+d.GetEndpointId(),
		"HOOKVERIFY_INBOX_ID="+d.GetInboxId(),
		"HOOKVERIFY_ATTEMPT="+strconv.Itoa(int(d.GetAttempts())),
		"HOOKVERIFY_METHOD="+d.GetMethod(),
		"HOOKVERIFY_URL="+d.GetUrl(),
		"HOOKVERIFY_HEADERS="+string(headersJSON),
	)
}

// extend extends d's lease, which ends at deadline, and returns its new end (deadline itself
// when the call failed transiently with time left: logged, and the next tick tries again). It
// fails when the lease is lost: the server says so, or the lease ran out while the server
// could not be reached.
func (w *worker) extend(ctx context.Context, d *hookverifyv1.InboxDelivery, deadline time.Time) (time.Time, error) {
	start := time.Now()
	// The call gets no more than the lease has left: one that hangs past the lease's end
	// (an overloaded server, packets dropped) would otherwise keep the command running while
	// another worker may have the delivery.
	callDeadline := start.Add(w.callTimeout)
	if deadline.Before(callDeadline) {
		callDeadline = deadline
	}
	callCtx, cancel := context.WithDeadline(ctx, callDeadline)
	_, err := w.inbox.ExtendLease(callCtx, &hookverifyv1.ExtendLeaseRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
		VisibilityTimeout: durationpb.New(w.visibility)})
	cancel()
	switch {
	case err == nil:
		return start.Add(w.visibility), nil
	case ctx.Err() != nil:
		return deadline, nil // cut short: run has returned, or the worker's second signal came
	case !transient(err):
		return deadline, err
	case !time.Now().Before(deadline):
		return deadline, fmt.Errorf("the lease ended while the server could not extend it: %w", err)
	}
	fmt.Fprintf(w.e.stderr, "worker: extend lease of %s: %v (trying again)\n", d.GetInboxId(), err)
	return deadline, nil
}

// settle acks d if its command succeeded and nacks it otherwise: for an immediate retry when
// the worker's shutdown stopped it, after --retry-after when it failed. Transient failures are
// tried again while the lease lasts; the worker's shutdown does not cut this short, its second
// signal does: the call under way is cut, and one last call, of at most lastCallBound, is
// made. A lease lost while the command ran settles nothing and returns runErr.
func (w *worker) settle(d *hookverifyv1.InboxDelivery, deadline time.Time, runErr error, stopped bool) error {
	nack := runErr != nil
	call := func(ctx context.Context) error {
		_, err := w.inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()})
		return err
	}
	if nack {
		fmt.Fprintf(w.e.stderr, "worker: delivery %s (event %s, attempt %d) failed: %v\n", d.GetInboxId(), d.GetEventId(), d.GetAttempts(), runErr)
		if errors.Is(runErr, errLeaseLost) {
			// Not ours to settle any more, and not done: the delivery runs again. Reported as
			// unsettled, so that --once, whose run did not complete it, exits 1 (a cron job
			// that reported success here would hide a delivery that keeps losing its lease).
			return runErr
		}
		retryAfter := w.retryAfter
		if stopped {
			retryAfter = 0
		}
		call = func(ctx context.Context) error {
			// Stopped, the delivery gives its attempt back (not_attempted): on its last attempt a
			// plain nack would send it to the dead letters for a deploy, having run to no end.
			resp, err := w.inbox.Nack(ctx, &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(),
				RetryAfter: durationpb.New(retryAfter), Error: truncate(runErr.Error(), 1024), NotAttempted: stopped})
			if err == nil && resp.GetDeadLettered() {
				fmt.Fprintf(w.e.stderr, "worker: delivery %s moved to the dead letters\n", d.GetInboxId())
			}
			return err
		}
	}
	hard := w.hard
	// answerLost holds an earlier attempt's failure that may have come after the call went
	// through: its answer lost on the way (UNAVAILABLE: a connection dropped), or not awaited
	// (a timeout, the second signal).
	var answerLost error
	for attempt := 1; ; attempt++ {
		parent, timeout, last := hard, w.callTimeout, hard.Err() != nil
		if last {
			parent, timeout = context.Background(), min(w.callTimeout, lastCallBound)
		}
		callCtx, cancel := context.WithTimeout(parent, timeout)
		err := call(callCtx)
		cancel()
		switch {
		case err == nil:
			return nil
		case server.AlreadyAcked(err):
			// The ack went through already: an earlier attempt whose answer was lost, or
			// another worker's after this lease ended. Either way the work is done.
			fmt.Fprintf(w.e.stderr, "worker: delivery %s was already acked (%v)\n", d.GetInboxId(), status.Convert(err).Message())
			return nil
		case nack && answerLost != nil && status.Code(err) == codes.FailedPrecondition:
			// The nack ended the lease: the attempt whose answer was lost went through, most
			// likely. Had it not, the lease ends unreleased and the delivery runs again all the
			// same: not lost either way, and not a failure to report. (A retried ack that went
			// through is told apart, ALREADY_ACKED; one refused so is a lease really lost.)
			fmt.Fprintf(w.e.stderr, "worker: delivery %s: the lease is gone after a nack whose answer was lost (%v); taken as nacked\n", d.GetInboxId(), answerLost)
			return nil
		case !last && hard.Err() != nil && (transient(err) || status.Code(err) == codes.Canceled):
			// Cut by the worker's second signal: one last, short, try below.
		case !transient(err):
			return err
		}
		if last {
			return fmt.Errorf("%w (the worker's second signal stopped the retries)", err)
		}
		switch status.Code(err) {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			answerLost = err
		}
		if hard.Err() != nil {
			continue
		}
		wait := backoff(attempt)
		if time.Now().Add(wait).After(deadline) {
			return fmt.Errorf("%w (the lease ends before another attempt)", err)
		}
		fmt.Fprintf(w.e.stderr, "worker: settle %s: %v (trying again)\n", d.GetInboxId(), err)
		sleep(hard, wait)
	}
}

// truncate cuts s to at most n bytes of valid UTF-8, between characters: a nack's error is a
// protobuf string, and one holding invalid UTF-8 cannot be sent, so the delivery would be
// left unsettled (a command whose path or error text is not UTF-8, or a cut through a
// character).
func truncate(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
