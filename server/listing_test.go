package server_test

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// bigEndpoints creates n endpoints whose public_url takes about size bytes each, so that n of
// them, and the audit events recording their creation, pass a client's 4 MiB together.
func bigEndpoints(t *testing.T, e *env, n, size int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := "big-" + string(rune('a'+i))
		e.createEndpoint(t, &hookverifyv1.Endpoint{Id: id, Provider: "twilio",
			Options: map[string]string{server.PublicURLOption: "https://hooks.example.com/" + strings.Repeat("p", size)}})
		ids = append(ids, id)
	}
	return ids
}

// TestListingsOverAClientsLimitArePaged: ListEndpoints answered every endpoint at once and
// ListAuditEvents a whole page however large: past the client's 4 MiB receive limit the
// client refused the answer, every time it asked, and no listing could be read at all.
func TestListingsOverAClientsLimitArePaged(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		want := bigEndpoints(t, e, 6, 900<<10)

		var got []string
		req := &hookverifyv1.ListEndpointsRequest{}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("ListEndpoints did not end after 10 pages")
			}
			resp, err := e.admin.ListEndpoints(t.Context(), req)
			if err != nil {
				t.Fatalf("ListEndpoints of 6 endpoints of 900 KiB each: %v", err)
			}
			for _, ep := range resp.GetEndpoints() {
				got = append(got, ep.GetId())
			}
			if next := pageTokenOf(resp); next == "" {
				break
			} else {
				setPageToken(req, next)
			}
		}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("endpoints listed %v, want %v", got, want)
		}

		got = nil
		areq := &hookverifyv1.ListAuditEventsRequest{}
		for pages := 0; ; pages++ {
			if pages > 10 {
				t.Fatal("ListAuditEvents did not end after 10 pages")
			}
			resp, err := e.admin.ListAuditEvents(t.Context(), areq)
			if err != nil {
				t.Fatalf("ListAuditEvents of 6 events of 900 KiB each: %v", err)
			}
			for _, ev := range resp.GetEvents() {
				got = append(got, ev.GetEndpointId())
			}
			if next := pageTokenOf(resp); next == "" {
				break
			} else {
				setPageToken(areq, next)
			}
		}
		// The events share the test clock's time: they come in the order of their ids.
		slices.Sort(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Fatalf("audit events listed for %v, want one for each of %v", got, want)
		}
	})
}

// TestAuditTrailIsPagedThroughEventsSharingATime: ListAuditEvents answered a page with no
// page token; the only way on was start_time = the last event's time, which repeats the
// events at that time already listed, or (one nanosecond later) skips those not yet listed.
// Events share a time whenever the clock does not move between them (here, the test clock).
func TestAuditTrailIsPagedThroughEventsSharingATime(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for i := range 7 {
			if i == 4 {
				e.clock.Advance(time.Second)
			}
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: fmt.Sprintf("ep-%d", i), Provider: "github"})
		}
		whole, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1000})
		if err != nil || len(whole.GetEvents()) != 7 || whole.GetNextPageToken() != "" {
			t.Fatalf("ListAuditEvents of everything = %d events, token %q, %v; want 7 and no token",
				len(whole.GetEvents()), whole.GetNextPageToken(), err)
		}
		var want []string
		for i, ev := range whole.GetEvents() {
			want = append(want, ev.GetId())
			if i > 0 {
				prev := whole.GetEvents()[i-1]
				if c := prev.GetTime().AsTime().Compare(ev.GetTime().AsTime()); c > 0 || c == 0 && prev.GetId() >= ev.GetId() {
					t.Errorf("event %d (%v) listed after %v: want (time, id) order", i, ev, prev)
				}
			}
		}
		for _, size := range []int32{1, 2, 3, 6, 7} {
			var got []string
			req := &hookverifyv1.ListAuditEventsRequest{PageSize: size}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatalf("page size %d: did not end after 10 pages", size)
				}
				resp, err := e.admin.ListAuditEvents(t.Context(), req)
				if err != nil {
					t.Fatalf("page size %d, page %d: %v", size, pages, err)
				}
				if len(resp.GetEvents()) == 0 {
					t.Fatalf("page size %d, page %d is empty", size, pages)
				}
				for _, ev := range resp.GetEvents() {
					got = append(got, ev.GetId())
				}
				if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("page size %d: listed %v, want %v", size, got, want)
			}
		}
		// The filters go with the token: the same ones continue.
		first, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1,
			StartTime: timestamppb.New(epoch), EndTime: timestamppb.New(epoch.Add(time.Hour))})
		if err != nil || first.GetNextPageToken() == "" {
			t.Fatalf("first page in a window = %v, %v", first, err)
		}
		again, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1000,
			StartTime: timestamppb.New(epoch), EndTime: timestamppb.New(epoch.Add(time.Hour)), PageToken: first.GetNextPageToken()})
		if err != nil || len(again.GetEvents()) != 6 || again.GetNextPageToken() != "" {
			t.Fatalf("rest of the window = %d events, token %q, %v; want 6 and the end", len(again.GetEvents()), again.GetNextPageToken(), err)
		}
	})
}

// TestEndpointsWithoutPageSizeGetTheDefaultPage: a caller older than page tokens sends
// neither field; it gets the first 1,000 endpoints and a token for the rest, and the pages
// followed list every endpoint once, in id order.
func TestEndpointsWithoutPageSizeGetTheDefaultPage(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		st := e.store
		var want []string
		for i := range 1003 {
			// Written to the store, as 1,003 calls would: the listing is what is tested.
			id := fmt.Sprintf("ep-%04d", 1002-i)
			if err := st.CreateEndpoint(t.Context(), storage.Endpoint{ID: id, Provider: "github", DedupeScope: id,
				TimestampTolerance: time.Minute, MaxBodyBytes: 1 << 20, Options: map[string]string{}, CreatedAt: epoch, UpdatedAt: epoch}); err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
		// Ids that a collation would order otherwise than bytes do.
		for _, id := range []string{"A-b", "a.B", "a_c", "B", "a"} {
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: id, Provider: "github"})
			want = append(want, id)
		}
		slices.Sort(want)
		first, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{})
		if err != nil || len(first.GetEndpoints()) != 1000 || first.GetNextPageToken() == "" {
			t.Fatalf("ListEndpoints without page_size = %d endpoints, token %q, %v; want 1000 and a token",
				len(first.GetEndpoints()), first.GetNextPageToken(), err)
		}
		for _, size := range []int32{0, 7, 1000} {
			var got []string
			req := &hookverifyv1.ListEndpointsRequest{PageSize: size}
			for pages := 0; ; pages++ {
				if pages > 200 {
					t.Fatalf("page size %d: did not end after 200 pages", size)
				}
				resp, err := e.admin.ListEndpoints(t.Context(), req)
				if err != nil {
					t.Fatalf("page size %d, page %d: %v", size, pages, err)
				}
				for _, ep := range resp.GetEndpoints() {
					got = append(got, ep.GetId())
				}
				if req.PageToken = resp.GetNextPageToken(); req.PageToken == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Errorf("page size %d: listed %d endpoints, want %d in byte order (first %v)", size, len(got), len(want), got[:min(len(got), 8)])
			}
		}
		// A client asking for more than the maximum gets pages of the maximum (AIP-158).
		resp, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{PageSize: 5000})
		if err != nil || len(resp.GetEndpoints()) != 1000 || resp.GetNextPageToken() == "" {
			t.Errorf("page_size 5000: %d endpoints, next token %q, %v; want a page of 1000 and a token", len(resp.GetEndpoints()), resp.GetNextPageToken(), err)
		}
		_, err = e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{PageSize: -1})
		wantCode(t, err, codes.InvalidArgument)
	})
}

// TestListingPageTokensAreChecked: a page token this service did not give, gave for another
// listing, or gave for other filters is INVALID_ARGUMENT, never a crash, a store error or a
// silently wrong page.
func TestListingPageTokensAreChecked(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		for _, id := range []string{"a", "b", "c"} {
			e.createEndpoint(t, &hookverifyv1.Endpoint{Id: id, Provider: "github"})
		}
		eps, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{PageSize: 1})
		if err != nil || eps.GetNextPageToken() == "" {
			t.Fatalf("ListEndpoints page of 1 = %v, %v; want a next page token", eps, err)
		}
		audit, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{EndpointId: "a", PageSize: 1,
			StartTime: timestamppb.New(epoch)})
		if err != nil || audit.GetNextPageToken() != "" {
			t.Fatalf("ListAuditEvents of a = %v, %v; want its one event", audit, err)
		}
		audit, err = e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{PageSize: 1, StartTime: timestamppb.New(epoch)})
		if err != nil || audit.GetNextPageToken() == "" {
			t.Fatalf("ListAuditEvents page of 1 = %v, %v; want a next page token", audit, err)
		}
		enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		dec := func(s string) []string {
			raw, _ := base64.RawURLEncoding.DecodeString(s)
			return strings.SplitN(string(raw), ":", 4)
		}
		e1, a1 := dec(eps.GetNextPageToken()), dec(audit.GetNextPageToken())
		forged := map[string]string{
			"garbage":           "garbage!",
			"not base64":        "%%%",
			"base64 of garbage": enc("hello"),
			"too long":          enc("e1:" + e1[1] + ":" + strings.Repeat("x", 4096)),
			"truncated":         eps.GetNextPageToken()[:len(eps.GetNextPageToken())/2],
			"dead-letter token": enc("d1:" + e1[1] + ":0:a"),
		}
		endpointTokens := map[string]string{
			"another version": enc("e9:" + e1[1] + ":" + e1[2]),
			"no id":           enc("e1:" + e1[1] + ":"),
			"id with NUL":     enc("e1:" + e1[1] + ":a\x00b"),
			"id not UTF-8":    enc("e1:" + e1[1] + ":\xff\xfe"),
			"another hash":    enc("e1:0000000000000000:" + e1[2]),
			"audit token":     audit.GetNextPageToken(),
		}
		auditTokens := map[string]string{
			"another version":   enc("a9:" + a1[1] + ":" + a1[2] + ":" + a1[3]),
			"time not a number": enc("a1:" + a1[1] + ":soon:" + a1[3]),
			"time out of range": enc(fmt.Sprintf("a1:%s:%d:%s", a1[1], int64(-1)<<62, a1[3])),
			"no id":             enc("a1:" + a1[1] + ":" + a1[2] + ":"),
			"id with NUL":       enc("a1:" + a1[1] + ":" + a1[2] + ":a\x00b"),
			"other filters":     enc("a1:0000000000000000:" + a1[2] + ":" + a1[3]),
			"endpoints token":   eps.GetNextPageToken(),
		}
		maps.Copy(endpointTokens, forged)
		maps.Copy(auditTokens, forged)
		for name, token := range endpointTokens {
			_, err := e.admin.ListEndpoints(t.Context(), &hookverifyv1.ListEndpointsRequest{PageToken: token})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("ListEndpoints page token %s (%q): %v, want INVALID_ARGUMENT", name, token, err)
			}
		}
		for name, token := range auditTokens {
			_, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{StartTime: timestamppb.New(epoch), PageToken: token})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("ListAuditEvents page token %s (%q): %v, want INVALID_ARGUMENT", name, token, err)
			}
		}
		// The same filters continue; any other does not, since its place would skip or repeat.
		if _, err := e.admin.ListAuditEvents(t.Context(), &hookverifyv1.ListAuditEventsRequest{StartTime: timestamppb.New(epoch),
			PageToken: audit.GetNextPageToken()}); err != nil {
			t.Errorf("the audit token with its own filters: %v", err)
		}
		for name, req := range map[string]*hookverifyv1.ListAuditEventsRequest{
			"no filter":           {},
			"another endpoint":    {EndpointId: "a", StartTime: timestamppb.New(epoch)},
			"start_time as end":   {EndTime: timestamppb.New(epoch)},
			"another start_time":  {StartTime: timestamppb.New(epoch.Add(time.Nanosecond))},
			"an end_time as well": {StartTime: timestamppb.New(epoch), EndTime: timestamppb.New(epoch.Add(time.Hour))},
		} {
			req.PageToken = audit.GetNextPageToken()
			_, err := e.admin.ListAuditEvents(t.Context(), req)
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("the audit token with %s: %v, want INVALID_ARGUMENT", name, err)
			}
		}
	})
}

// pageTokenOf returns a listing answer's next page token.
func pageTokenOf(m proto.Message) string {
	return m.(interface{ GetNextPageToken() string }).GetNextPageToken()
}

// setPageToken sets a listing request's page token.
func setPageToken(m proto.Message, token string) {
	switch r := m.(type) {
	case *hookverifyv1.ListEndpointsRequest:
		r.PageToken = token
	case *hookverifyv1.ListAuditEventsRequest:
		r.PageToken = token
	}
}
