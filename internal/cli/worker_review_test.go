package cli

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	hookverifyv1.RegisterInboxServiceServer(g, f)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	marker := filepath.Join(t.TempDir(), "side-effect")
	// The lease ends 3 s after it was taken; the side effect comes at 6 s.
	wait, out := runWorkerAsync(context.Background(), []string{"--once", "--visibility", "3s", "--timeout", "30s",
		"--server", lis.Addr().String(), "--", "sh", "-c", fmt.Sprintf("sleep 6; touch %s", marker)})
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
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	hookverifyv1.RegisterInboxServiceServer(g, f)
	go func() { _ = g.Serve(lis) }()
	t.Cleanup(g.Stop)

	marker := filepath.Join(t.TempDir(), "side-effect")
	wait, out := runWorkerAsync(context.Background(), []string{"--once", "--visibility", "1s", "--timeout", "30s",
		"--server", lis.Addr().String(), "--", "sh", "-c", fmt.Sprintf("touch %s", marker)})
	if _, finished := wait(40 * time.Second); !finished {
		t.Fatal("worker did not finish")
	}
	if waitForFile(t, marker, 100*time.Millisecond) {
		t.Errorf("the command ran for a delivery whose 1 s lease was answered after 2.5 s (output %q)", out.String())
	}
}
