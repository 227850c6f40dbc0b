package server_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestSkewedInstancesDoNotShareALease: instances on one PostgreSQL database whose clocks differ
// by more than a visibility timeout (NTP not yet synced, a VM resumed) still never hand the same
// delivery to two workers at once. A lease's end is written by one instance and compared by
// another; timed by each instance's own wall clock, an instance 31 s ahead took over a 30 s
// lease the moment it was given, and a lease given or extended by one 31 s behind had ended
// before it started, so that the delivery ran twice at once, the second worker's side effects
// racing the first's.
func TestSkewedInstancesDoNotShareALease(t *testing.T) {
	pg := backends[1]
	dsn := pg.newDatabase(t)
	st := openStore(t, pg, dsn)
	e := newEnvOn(t, pg, dsn, st)
	// The deliveries are accepted at about the real time, so that the instances below find
	// them due whatever their clocks say.
	e.clock.Advance(time.Now().Add(-time.Minute).Sub(e.clock.Now()).Truncate(time.Second))
	secret, _ := e.setup(t, githubProvider, "work")
	for range 4 {
		e.accept(t, e.deliver(t, githubProvider, "work", eventID(githubProvider), secret))
	}
	skewed := func(skew time.Duration) *instance {
		e.options = func(o *server.Options) {
			o.Now = func() time.Time { return time.Now().Add(skew) }
			o.DatabaseClock = true
		}
		return e.start(t, st)
	}
	exact, ahead, behind := skewed(0), skewed(31*time.Second), skewed(-31*time.Second)
	leaseOne := func(in *instance) []*hookverifyv1.InboxDelivery {
		t.Helper()
		resp, err := in.inbox.Lease(t.Context(), &hookverifyv1.LeaseRequest{MaxDeliveries: 1, VisibilityTimeout: durationpb.New(30 * time.Second)})
		if err != nil {
			t.Fatalf("Lease: %v", err)
		}
		return resp.GetDeliveries()
	}

	// An instance ahead must not find a lease just given by another expired.
	first := leaseOne(exact)
	if len(first) != 1 {
		t.Fatalf("leased %d, want 1", len(first))
	}
	second := leaseOne(ahead)
	if len(second) != 1 || second[0].GetInboxId() == first[0].GetInboxId() {
		t.Fatalf("the instance 31 s ahead leased %v while another worker holds %s for 30 s more", second, first[0].GetInboxId())
	}
	// A lease given by an instance behind must not have ended as it starts.
	third := leaseOne(behind)
	if len(third) != 1 {
		t.Fatalf("the instance 31 s behind leased %d, want 1", len(third))
	}
	fourth := leaseOne(exact)
	if len(fourth) != 1 || fourth[0].GetInboxId() == third[0].GetInboxId() {
		t.Fatalf("leased %v, want the fourth delivery, not the third, which the instance 31 s behind leased for 30 s", fourth)
	}
	// Nor a lease extended through an instance behind, taken over by one ahead.
	if _, err := behind.inbox.ExtendLease(t.Context(), &hookverifyv1.ExtendLeaseRequest{InboxId: fourth[0].GetInboxId(),
		LeaseToken: fourth[0].GetLeaseToken(), VisibilityTimeout: durationpb.New(30 * time.Second)}); err != nil {
		t.Fatalf("ExtendLease: %v", err)
	}
	if again := leaseOne(ahead); len(again) != 0 {
		t.Fatalf("the instance 31 s ahead leased %v, just extended by 30 s through the instance 31 s behind", again)
	}
}
