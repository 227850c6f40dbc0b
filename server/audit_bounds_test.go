package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// TestNoAdminWriteLeavesTheAuditTrailUnreadable: an endpoint's options were not bounded (the
// gRPC receive limit is 32 MiB), and an update's audit event lists the options before and
// after. One update between two public_urls of 2.2 MiB wrote an event of 4.4 MiB: past a
// client's 4 MiB receive limit, every ListAuditEvents page reaching it failed, for every
// caller, for good, and `hookverify audit --all` stopped there. Either the write is refused
// or every page of the trail can be read.
func TestNoAdminWriteLeavesTheAuditTrailUnreadable(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, size := range []int{2200 << 10, 1000 << 10} {
			big := func(c string) map[string]string {
				return map[string]string{server.PublicURLOption: "https://hooks.example.com/" + strings.Repeat(c, size)}
			}
			id := fmt.Sprintf("big-%d", size)
			_, createErr := e.admin.CreateEndpoint(t.Context(), &hookverifyv1.CreateEndpointRequest{
				Endpoint: &hookverifyv1.Endpoint{Id: id, Provider: "twilio", Options: big("a")}})
			if createErr == nil {
				_, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{
					Endpoint: &hookverifyv1.Endpoint{Id: id, Provider: "twilio", Options: big("b")}})
				if err != nil && status.Code(err) != codes.InvalidArgument {
					t.Fatalf("UpdateEndpoint with options of %d bytes: %v, want success or INVALID_ARGUMENT", size, err)
				}
			} else if status.Code(createErr) != codes.InvalidArgument || size < 1<<20 {
				t.Fatalf("CreateEndpoint with options of %d bytes: %v", size, createErr)
			}
		}
		// Something after it, which an auditor must be able to reach.
		e.clock.Advance(time.Second)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "after", Provider: "github"})

		req := &hookverifyv1.ListAuditEventsRequest{}
		var actions []string
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("ListAuditEvents did not end after 10 pages")
			}
			resp, err := e.admin.ListAuditEvents(t.Context(), req)
			if err != nil {
				t.Fatalf("ListAuditEvents page %d (after %v): %v", pages, actions, err)
			}
			for _, ev := range resp.GetEvents() {
				actions = append(actions, ev.GetAction()+" "+ev.GetEndpointId())
			}
			if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
				break
			}
		}
		if len(actions) == 0 || actions[len(actions)-1] != "endpoint.create after" {
			t.Fatalf("audit trail listed %v, want it to end with the creation of endpoint after", actions)
		}
	})
}

// TestAnOversizedStoredAuditEventDoesNotBlockTheTrail: an event written before endpoint
// options were bounded may alone pass a client's 4 MiB receive limit. Its page failed for
// every such caller, and the events after it could not be reached by paging at all. It is
// answered with its detail cut, saying so, and the trail goes on past it.
func TestAnOversizedStoredAuditEventDoesNotBlockTheTrail(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		huge := "options: {public_url=https://a/" + strings.Repeat("é", 2500<<10) + "}"
		ctx := storage.WithAuditEvent(t.Context(), storage.AuditEvent{ID: "aud_000000000000000000000001", At: epoch,
			Actor: "token:tok_0123456789abcdef", Action: "endpoint.create", EndpointID: "old", Detail: huge})
		if err := e.store.CreateEndpoint(ctx, storage.Endpoint{ID: "old", Provider: "twilio", DedupeScope: "old",
			TimestampTolerance: time.Minute, MaxBodyBytes: 1 << 20, CreatedAt: epoch, UpdatedAt: epoch}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "after", Provider: "github"})

		req := &hookverifyv1.ListAuditEventsRequest{}
		var got []*hookverifyv1.AuditEvent
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("ListAuditEvents did not end after 10 pages")
			}
			resp, err := e.admin.ListAuditEvents(t.Context(), req)
			if err != nil {
				t.Fatalf("ListAuditEvents page %d: %v", pages, err)
			}
			got = append(got, resp.GetEvents()...)
			if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
				break
			}
		}
		if len(got) != 2 || got[0].GetEndpointId() != "old" || got[1].GetEndpointId() != "after" {
			t.Fatalf("listed %d events %v, want old's and after's", len(got), got)
		}
		d := got[0].GetDetail()
		if !utf8.ValidString(d) || !strings.HasPrefix(huge, d[:1<<20]) || !strings.Contains(d, fmt.Sprintf("%d bytes", len(huge))) {
			t.Errorf("the oversized detail is answered as %d bytes ending %q: want its start, and its length named", len(d), d[max(0, len(d)-80):])
		}
	})
}

// TestUpdateTimeOfTheZeroTimeIsStillAPrecondition: an endpoint row without an update time (a
// NULL updated_at, which the PostgreSQL schema allows, as rows written outside this release
// have) reads back with update_time 0001-01-01T00:00:00Z. UpdateEndpoint took that time as
// "no update_time", so the CLI's read-modify-write, sending it back, applied unconditionally:
// two admins updating the endpoint at once each had the other's change undone in silence.
func TestUpdateTimeOfTheZeroTimeIsStillAPrecondition(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		if err := e.store.CreateEndpoint(t.Context(), storage.Endpoint{ID: "untimed", Provider: "github", DedupeScope: "untimed",
			TimestampTolerance: time.Minute, MaxBodyBytes: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "untimed"})
		if err != nil {
			t.Fatal(err)
		}
		// Two admins read it, and each changes one setting.
		first, second := got.GetEndpoint(), proto.CloneOf(got.GetEndpoint())
		if first.GetUpdateTime() == nil {
			t.Fatal("GetEndpoint answered no update_time")
		}
		first.Disabled = true
		second.MaxBodyBytes = 2 << 20
		if _, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: first}); err != nil {
			t.Fatalf("first update: %v", err)
		}
		e.clock.Advance(time.Second)
		_, err = e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: second})
		if status.Code(err) != codes.Aborted {
			now, _ := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: "untimed"})
			t.Fatalf("second update from the same read: %v, want ABORTED; endpoint now disabled=%v max_body_bytes=%d",
				err, now.GetEndpoint().GetDisabled(), now.GetEndpoint().GetMaxBodyBytes())
		}
	})
}

// TestAuditEndTimeAtTheFirstInstantListsNothing: end_time 0001-01-01T00:00:00Z, the earliest
// time a Timestamp may hold, asks for the events before it: none. Rounded to the stores' zero
// time, which they read as "no bound", it listed every event.
func TestAuditEndTimeAtTheFirstInstantListsNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "a", Provider: "github"})
		first := &timestamppb.Timestamp{Seconds: -62135596800}
		resp, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{EndTime: first})
		if err != nil || len(resp.GetEvents()) != 0 || resp.GetNextPageToken() != "" {
			t.Fatalf("ListAuditEvents before %v = %d events, token %q, %v; want none", first.AsTime(), len(resp.GetEvents()), resp.GetNextPageToken(), err)
		}
		// From that instant on is every event.
		resp, err = e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{StartTime: first})
		if err != nil || len(resp.GetEvents()) != 1 {
			t.Fatalf("ListAuditEvents from %v = %d events, %v; want 1", first.AsTime(), len(resp.GetEvents()), err)
		}
	})
}
