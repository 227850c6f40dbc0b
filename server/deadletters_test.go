package server_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
	"github.com/hookverify/hookverify/storage"
)

// listAllDead follows ListDeadLetters' page tokens from the first page to the end and returns
// the inbox ids listed, in order, and how many pages it took.
func listAllDead(t *testing.T, e *env, req *hookverifyv1.ListDeadLettersRequest) ([]string, int) {
	t.Helper()
	var ids []string
	for pages := 1; pages <= 1000; pages++ {
		resp, err := e.inbox.ListDeadLetters(t.Context(), req)
		if err != nil {
			t.Fatalf("ListDeadLetters page %d (token %q): %v", pages, req.GetPageToken(), err)
		}
		for _, d := range resp.GetDeliveries() {
			ids = append(ids, d.GetInboxId())
		}
		if resp.GetNextPageToken() == "" {
			return ids, pages
		}
		if len(resp.GetDeliveries()) == 0 {
			t.Fatalf("ListDeadLetters page %d is empty but gives a next page token", pages)
		}
		req.PageToken = resp.GetNextPageToken()
	}
	t.Fatal("ListDeadLetters did not end after 1000 pages")
	return nil, 0
}

// killAccepted leases every accepted delivery at its only attempt and nacks it to the dead
// letters.
func killAccepted(t *testing.T, e *env) {
	t.Helper()
	for {
		got := lease(t, e, 100, time.Minute)
		if len(got) == 0 {
			return
		}
		for _, d := range got {
			resp, err := e.inbox.Nack(t.Context(), &hookverifyv1.NackRequest{InboxId: d.GetInboxId(), LeaseToken: d.GetLeaseToken(), Error: "down"})
			if err != nil || !resp.GetDeadLettered() {
				t.Fatalf("Nack %s = %v, %v; want dead-lettered", d.GetInboxId(), resp, err)
			}
		}
	}
}

// TestDeadLettersArePagedThroughToTheEnd: ListDeadLetters answered at most limit (1,000)
// dead letters and at most about 3.5 MiB, with nothing to ask for the rest: an operator with
// more could not see them without requeuing some. Its pages now follow each other, each
// dead letter listed once, the last page's token empty, also when pages are cut by size.
func TestDeadLettersArePagedThroughToTheEnd(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		var want []string
		for _, r := range acceptSome(t, e, "work", 7) {
			want = append(want, r.GetInboxId())
		}
		acceptSome(t, e, "other", 2)
		killAccepted(t, e)

		for _, limit := range []int32{0, 1, 3, 7} {
			got, pages := listAllDead(t, e, &hookverifyv1.ListDeadLettersRequest{EndpointIds: []string{"work"}, Limit: limit})
			if !slices.Equal(got, want) {
				t.Fatalf("limit %d: listed %q, want %q", limit, got, want)
			}
			if wantPages := max(1, (7+int(limit)-1)/max(1, int(limit))); limit != 0 && pages != wantPages {
				t.Errorf("limit %d: %d pages, want %d", limit, pages, wantPages)
			}
		}
		if got, _ := listAllDead(t, e, &hookverifyv1.ListDeadLettersRequest{Limit: 2}); len(got) != 9 {
			t.Errorf("unfiltered: listed %d dead letters, want 9", len(got))
		}
	})
}

// TestDeadLetterPagesCutBySizeContinue: pages of large dead letters end at the size budget,
// and the next page starts with the first one left out.
func TestDeadLetterPagesCutBySizeContinue(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		const n = 8
		acceptLarge(t, e, n)
		killAccepted(t, e)
		got, pages := listAllDead(t, e, &hookverifyv1.ListDeadLettersRequest{})
		if len(got) != n || len(slices.Compact(slices.Clone(got))) != n {
			t.Fatalf("listed %d dead letters of 1 MB (%q), want each of %d once", len(got), got, n)
		}
		if pages < 3 {
			t.Errorf("%d dead letters of 1 MB in %d pages, want at least 3 (at most 3 in 4 MiB)", n, pages)
		}
	})
}

// TestDeadLetterPageTokenIsChecked: a page token this service did not give, or gave for other
// filters, is INVALID_ARGUMENT, never a crash, a store error or a silently wrong page.
func TestDeadLetterPageTokenIsChecked(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		acceptSome(t, e, "work", 3)
		killAccepted(t, e)
		first, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{EndpointIds: []string{"work"}, Limit: 1})
		if err != nil || first.GetNextPageToken() == "" {
			t.Fatalf("first page = %v, %v; want one and a next page token", first, err)
		}
		enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
		raw, _ := base64.RawURLEncoding.DecodeString(first.GetNextPageToken())
		parts := strings.SplitN(string(raw), ":", 4)
		for name, token := range map[string]string{
			"garbage":             "garbage!",
			"not base64":          "%%%",
			"base64 of garbage":   enc("hello"),
			"another version":     enc("d9:" + parts[1] + ":" + parts[2] + ":" + parts[3]),
			"time not a number":   enc("d1:" + parts[1] + ":soon:" + parts[3]),
			"time out of range":   enc(fmt.Sprintf("d1:%s:%d:%s", parts[1], int64(-1)<<62, parts[3])),
			"time far ahead":      enc(fmt.Sprintf("d1:%s:%d:%s", parts[1], int64(1)<<62, parts[3])),
			"no id":               enc("d1:" + parts[1] + ":" + parts[2] + ":"),
			"id with NUL":         enc("d1:" + parts[1] + ":" + parts[2] + ":a\x00b"),
			"id not UTF-8":        enc("d1:" + parts[1] + ":" + parts[2] + ":\xff\xfe"),
			"too long":            enc("d1:" + parts[1] + ":" + parts[2] + ":" + strings.Repeat("x", 4096)),
			"truncated":           first.GetNextPageToken()[:len(first.GetNextPageToken())/2],
			"other filters' hash": enc("d1:0000000000000000:" + parts[2] + ":" + parts[3]),
		} {
			_, err := e.inbox.ListDeadLetters(t.Context(), &hookverifyv1.ListDeadLettersRequest{EndpointIds: []string{"work"}, PageToken: token})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("page token %s (%q): %v, want INVALID_ARGUMENT", name, token, err)
			}
		}
		// The same filters in another order continue; other filters do not.
		same := &hookverifyv1.ListDeadLettersRequest{EndpointIds: []string{"work", "work"}, PageToken: first.GetNextPageToken()}
		if _, err := e.inbox.ListDeadLetters(t.Context(), same); err != nil {
			t.Errorf("the token with the same endpoint named twice: %v", err)
		}
		other := &hookverifyv1.ListDeadLettersRequest{PageToken: first.GetNextPageToken()}
		if _, err := e.inbox.ListDeadLetters(t.Context(), other); status.Code(err) != codes.InvalidArgument {
			t.Errorf("the token without its filter: %v, want INVALID_ARGUMENT", err)
		}
	})
}

// TestDeadLetterPageFitsWithLongEventIDsAndErrors: the store's size budget counts bodies,
// headers and URLs, leaving 512 KiB for the rest of 100 deliveries as a lease takes; a page
// of 1,000 dead letters with long event ids and last errors passed the client's 4 MiB limit,
// and the client refused that page every time it asked.
func TestDeadLetterPageFitsWithLongEventIDsAndErrors(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnvWith(t, b, func(o *server.Options) { o.MaxAttempts = 1 })
		e.setup(t, githubProvider, "long")
		const n = 1000
		base := e.clock.Now()
		for i := range n {
			d := storage.Delivery{
				InboxID: fmt.Sprintf("inbox-%04d", i), Scope: "long", EventID: fmt.Sprintf("%04d-%s", i, strings.Repeat("e", 507)),
				EndpointID: "long", OperationKey: fmt.Sprintf("op-%04d", i), SecretID: "s1", Method: "POST",
				URL: "https://hooks.example.com/long", Body: []byte(strings.Repeat("b", 3000)), ReceivedAt: base,
			}
			if r, err := e.store.Claim(t.Context(), d); err != nil || !r.Accepted {
				t.Fatalf("Claim %d = %+v, %v", i, r, err)
			}
		}
		ib := e.store.(storage.InboxStore)
		for {
			res, err := ib.Lease(t.Context(), storage.LeaseRequest{Max: 100, Visibility: time.Minute, MaxAttempts: 1, LeaseToken: "tok", Now: base})
			if err != nil {
				t.Fatalf("Lease: %v", err)
			}
			if len(res.Deliveries) == 0 {
				break
			}
			for _, d := range res.Deliveries {
				if _, err := ib.Nack(t.Context(), d.InboxID, "tok", base, 1, strings.Repeat("\x00", 1024), base); err != nil {
					t.Fatalf("Nack: %v", err)
				}
			}
		}
		got, _ := listAllDead(t, e, &hookverifyv1.ListDeadLettersRequest{Limit: 1000})
		if len(got) != n {
			t.Fatalf("listed %d dead letters, want %d", len(got), n)
		}
	})
}
