package server_test

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestAuditTimeFiltersSubMicrosecond: ListAuditEvents' start_time is "at or after" and
// end_time "before", to the nanosecond a Timestamp carries, although the stores keep
// microseconds. An event recorded at T is not at or after T+1ns, and is before T+1ns.
func TestAuditTimeFiltersSubMicrosecond(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: "audited", Provider: "stripe"})
		list := func(req *hookverifyv1.ListAuditEventsRequest) []*hookverifyv1.AuditEvent {
			t.Helper()
			req.EndpointId = "audited"
			resp, err := e.admin.ListAuditEvents(t.Context(), req)
			if err != nil {
				t.Fatalf("ListAuditEvents: %v", err)
			}
			return resp.GetEvents()
		}
		all := list(&hookverifyv1.ListAuditEventsRequest{})
		if len(all) != 1 {
			t.Fatalf("%d events, want the creation's", len(all))
		}
		at := all[0].GetTime().AsTime()
		if got := list(&hookverifyv1.ListAuditEventsRequest{StartTime: timestamppb.New(at.Add(time.Nanosecond))}); len(got) != 0 {
			t.Errorf("start_time 1ns after the event's time listed it: %v", got)
		}
		if got := list(&hookverifyv1.ListAuditEventsRequest{StartTime: timestamppb.New(at.Add(999 * time.Nanosecond))}); len(got) != 0 {
			t.Errorf("start_time 999ns after the event's time listed it: %v", got)
		}
		if got := list(&hookverifyv1.ListAuditEventsRequest{EndTime: timestamppb.New(at.Add(time.Nanosecond))}); len(got) != 1 {
			t.Errorf("end_time 1ns after the event's time did not list it: %v", got)
		}
		if got := list(&hookverifyv1.ListAuditEventsRequest{StartTime: timestamppb.New(at), EndTime: timestamppb.New(at.Add(time.Microsecond))}); len(got) != 1 {
			t.Errorf("[T, T+1µs) did not list the event at T: %v", got)
		}
		if got := list(&hookverifyv1.ListAuditEventsRequest{StartTime: timestamppb.New(at.Add(-time.Nanosecond)), EndTime: timestamppb.New(at)}); len(got) != 0 {
			t.Errorf("[T-1ns, T) listed the event at T: %v", got)
		}
	})
}

// TestToleranceAnsweredAsStored: CreateEndpoint and UpdateEndpoint answer "the stored
// endpoint", and GetEndpoint reads it back; the stores keep the tolerance in whole
// milliseconds. A tolerance with a fraction of a millisecond was answered as given and stored
// cut down (1.5 ms as 1 ms; 0.5 ms as zero, which no delivery's signed timestamp, in whole
// seconds, ever meets). It is rounded up to the millisecond, and answered so.
func TestToleranceAnsweredAsStored(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for i, c := range []struct{ given, want time.Duration }{
			{1500 * time.Microsecond, 2 * time.Millisecond},
			{500 * time.Microsecond, time.Millisecond},
			{time.Nanosecond, time.Millisecond},
			{299*time.Second + 999999999, 300 * time.Second},
			{7 * time.Second, 7 * time.Second},
		} {
			id := fmt.Sprintf("tol-%d", i)
			created := e.createEndpoint(t, &hookverifyv1.Endpoint{Id: id, Provider: "stripe", TimestampTolerance: durationpb.New(c.given)})
			got, err := e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: id})
			if err != nil {
				t.Fatalf("GetEndpoint: %v", err)
			}
			if a, s := created.GetTimestampTolerance().AsDuration(), got.GetEndpoint().GetTimestampTolerance().AsDuration(); a != c.want || s != c.want {
				t.Errorf("tolerance %s: answered %s, stored %s, want %s", c.given, a, s, c.want)
			}
			updated, err := e.admin.UpdateEndpoint(t.Context(), &hookverifyv1.UpdateEndpointRequest{Endpoint: &hookverifyv1.Endpoint{Id: id, TimestampTolerance: durationpb.New(c.given)}})
			if err != nil {
				t.Fatalf("UpdateEndpoint: %v", err)
			}
			got, err = e.admin.GetEndpoint(t.Context(), &hookverifyv1.GetEndpointRequest{Id: id})
			if err != nil {
				t.Fatalf("GetEndpoint: %v", err)
			}
			if a, s := updated.GetEndpoint().GetTimestampTolerance().AsDuration(), got.GetEndpoint().GetTimestampTolerance().AsDuration(); a != c.want || s != c.want {
				t.Errorf("update to tolerance %s: answered %s, stored %s, want %s", c.given, a, s, c.want)
			}
		}
	})
}
