package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// runWorker leases deliveries and runs a command for each: the raw body on standard input, the
// delivery's identity in the environment (HOOKVERIFY_OPERATION_KEY is the idempotency key for
// the command's side effects). Exit status 0 acks; anything else nacks for a later attempt. The
// lease is extended while the command runs, so long jobs are not handed to another worker.
func runWorker(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "worker")
	var r remoteFlags
	var f filterFlags
	r.register(fs)
	f.register(fs)
	visibility := fs.Duration("visibility", 30*time.Second, "lease duration, extended while the command runs")
	retryAfter := fs.Duration("retry-after", time.Minute, "delay before a failed delivery is retried")
	idle := fs.Duration("idle", time.Second, "wait when the inbox is empty")
	once := fs.Bool("once", false, "exit when the inbox has nothing leasable instead of waiting")
	if err := fs.Parse(args); err != nil {
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
	conn, err := r.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	inbox := hookverifyv1.NewInboxServiceClient(conn.GRPC())
	for ctx.Err() == nil {
		resp, err := inbox.Lease(ctx, &hookverifyv1.LeaseRequest{EndpointIds: f.endpoints, DedupeScopes: f.scopes, MaxDeliveries: 1, VisibilityTimeout: durationpb.New(*visibility)})
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return fmt.Errorf("lease: %w", err)
		}
		if len(resp.GetDeliveries()) == 0 {
			if *once {
				return nil
			}
			select {
			case <-ctx.Done():
			case <-time.After(*idle):
			}
			continue
		}
		d := resp.GetDeliveries()[0]
		runErr := runForDelivery(ctx, e, inbox, d, command, *visibility)
		if runErr == nil {
			if _, err := inbox.Ack(ctx, &hookverifyv1.AckRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken()}); err != nil {
				fmt.Fprintf(e.stderr, "worker: ack %s: %v\n", d.GetInboxId(), err)
			}
			continue
		}
		fmt.Fprintf(e.stderr, "worker: delivery %s (event %s, attempt %d) failed: %v\n", d.GetInboxId(), d.GetEventId(), d.GetAttempts(), runErr)
		nack, err := inbox.Nack(ctx, &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), RetryAfter: durationpb.New(*retryAfter), Error: truncate(runErr.Error(), 1024)})
		if err != nil {
			fmt.Fprintf(e.stderr, "worker: nack %s: %v\n", d.GetInboxId(), err)
		} else if nack.GetDeadLettered() {
			fmt.Fprintf(e.stderr, "worker: delivery %s moved to the dead letters\n", d.GetInboxId())
		}
	}
	return nil
}

// runForDelivery runs the command for one delivery, extending its lease every half visibility.
func runForDelivery(ctx context.Context, e env, inbox hookverifyv1.InboxServiceClient, d *hookverifyv1.InboxDelivery, command []string, visibility time.Duration) error {
	cmd := exec.CommandContext(ctx, command[0], command[1:]...)
	cmd.Stdin = bytes.NewReader(d.GetBody())
	cmd.Stdout, cmd.Stderr = e.stdout, e.stderr
	cmd.Env = append(os.Environ(),
		"HOOKVERIFY_OPERATION_KEY="+d.GetOperationKey(),
		"HOOKVERIFY_EVENT_ID="+d.GetEventId(),
		"HOOKVERIFY_ENDPOINT_ID="+d.GetEndpointId(),
		"HOOKVERIFY_INBOX_ID="+d.GetInboxId(),
		"HOOKVERIFY_ATTEMPT="+strconv.Itoa(int(d.GetAttempts())),
	)
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ticker := time.NewTicker(visibility / 2)
	defer ticker.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-ticker.C:
			if _, err := inbox.ExtendLease(ctx, &hookverifyv1.ExtendLeaseRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), VisibilityTimeout: durationpb.New(visibility)}); err != nil {
				// The lease is lost: another worker may run this delivery now. Stop ours.
				_ = cmd.Process.Kill()
				<-done
				return errors.Join(errors.New("lease lost while the command ran"), err)
			}
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
