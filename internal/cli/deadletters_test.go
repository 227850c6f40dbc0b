package cli

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// pagedDeadLetters serves dead letters "d1".."d5" two a page, the token being the index of
// the page's first, and records the tokens it was asked for.
type pagedDeadLetters struct {
	hookverifyv1.UnimplementedInboxServiceServer
	mu     sync.Mutex
	tokens []string
}

func (p *pagedDeadLetters) ListDeadLetters(_ context.Context, req *hookverifyv1.ListDeadLettersRequest) (*hookverifyv1.ListDeadLettersResponse, error) {
	p.mu.Lock()
	p.tokens = append(p.tokens, req.GetPageToken())
	p.mu.Unlock()
	ids := []string{"d1", "d2", "d3", "d4", "d5"}
	start := map[string]int{"": 0, "t2": 2, "t4": 4}
	i, ok := start[req.GetPageToken()]
	if !ok {
		return nil, status.Error(codes.InvalidArgument, "bad page token")
	}
	resp := &hookverifyv1.ListDeadLettersResponse{}
	for _, id := range ids[i:min(i+2, len(ids))] {
		resp.Deliveries = append(resp.Deliveries, &hookverifyv1.InboxDelivery{InboxId: id})
	}
	if i+2 < len(ids) {
		resp.NextPageToken = map[int]string{0: "t2", 2: "t4"}[i]
	}
	return resp, nil
}

type deadPage struct {
	Deliveries []struct {
		InboxID string `json:"inboxId"`
	} `json:"deliveries"`
	NextPageToken string `json:"nextPageToken"`
}

func (p deadPage) ids() string {
	var ids []string
	for _, d := range p.Deliveries {
		ids = append(ids, d.InboxID)
	}
	return strings.Join(ids, ",")
}

// TestInboxDeadPages: inbox dead printed one answer of at most --limit dead letters, with no
// way to see the rest. It prints the next page token with the page, takes --page-token to
// list the page after it, and --all follows the tokens to the end, a JSON document per page.
func TestInboxDeadPages(t *testing.T) {
	f := &pagedDeadLetters{}
	remote := startFakeInbox(t, f)
	dead := func(args ...string) []deadPage {
		t.Helper()
		code, out, errOut := run(t, "", append(append([]string{"inbox", "dead"}, args...), remote...)...)
		if code != 0 {
			t.Fatalf("inbox dead %v: exit %d, %q", args, code, errOut)
		}
		var pages []deadPage
		dec := json.NewDecoder(strings.NewReader(out))
		for dec.More() {
			var p deadPage
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("inbox dead %v printed %q: %v", args, out, err)
			}
			pages = append(pages, p)
		}
		return pages
	}
	if got := dead(); len(got) != 1 || got[0].ids() != "d1,d2" || got[0].NextPageToken != "t2" {
		t.Fatalf("inbox dead: %+v, want d1,d2 and the next page token t2", got)
	}
	if got := dead("--page-token", "t2"); len(got) != 1 || got[0].ids() != "d3,d4" || got[0].NextPageToken != "t4" {
		t.Fatalf("inbox dead --page-token t2: %+v, want d3,d4 and t4", got)
	}
	got := dead("--all")
	if len(got) != 3 || got[0].ids() != "d1,d2" || got[1].ids() != "d3,d4" || got[2].ids() != "d5" || got[2].NextPageToken != "" {
		t.Fatalf("inbox dead --all: %+v, want three pages, d1 to d5, the last with no token", got)
	}
	if got := dead("--all", "--page-token", "t4"); len(got) != 1 || got[0].ids() != "d5" {
		t.Fatalf("inbox dead --all --page-token t4: %+v, want the last page", got)
	}
	// One page that does not end the listing says so on standard error, as endpoint list and
	// audit do; the last page says nothing.
	if _, _, errOut := run(t, "", append([]string{"inbox", "dead"}, remote...)...); !strings.Contains(errOut, "more dead deliveries follow") {
		t.Errorf("inbox dead, a page with more after it: standard error %q, want a note that more follow", errOut)
	}
	if _, _, errOut := run(t, "", append([]string{"inbox", "dead", "--page-token", "t4"}, remote...)...); errOut != "" {
		t.Errorf("inbox dead, the last page: standard error %q, want nothing", errOut)
	}
	if code, _, errOut := run(t, "", append([]string{"inbox", "dead", "--page-token", "nope"}, remote...)...); code == 0 || !strings.Contains(errOut, "page token") {
		t.Fatalf("inbox dead with a bad token: exit %d, %q; want the server's error", code, errOut)
	}
}

// discardRecorder records the Discard calls it answers.
type discardRecorder struct {
	hookverifyv1.UnimplementedInboxServiceServer
	mu    sync.Mutex
	calls []*hookverifyv1.DiscardRequest
}

func (d *discardRecorder) Discard(_ context.Context, req *hookverifyv1.DiscardRequest) (*hookverifyv1.DiscardResponse, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, req)
	if req.GetInboxId() != "d1" {
		return nil, status.Errorf(codes.NotFound, "no dead delivery %q", req.GetInboxId())
	}
	return &hookverifyv1.DiscardResponse{}, nil
}

// TestInboxDiscard: inbox discard sends the id and the reason, and refuses to send a call
// without either (a reason is what tells a later reader why the work never ran).
func TestInboxDiscard(t *testing.T) {
	f := &discardRecorder{}
	remote := startFakeInbox(t, f)
	for _, args := range [][]string{{"--id", "d1"}, {"--reason", "poison"}, {"--id", "d1", "--reason", "  "}} {
		if code, _, errOut := run(t, "", append(append([]string{"inbox", "discard"}, args...), remote...)...); code != 2 || !strings.Contains(errOut, "--reason") {
			t.Errorf("inbox discard %v: exit %d, %q; want a usage error naming --id and --reason", args, code, errOut)
		}
	}
	if code, _, errOut := run(t, "", append([]string{"inbox", "discard", "--id", "d1", "--reason", "charges a closed account"}, remote...)...); code != 0 {
		t.Fatalf("inbox discard: exit %d, %q", code, errOut)
	}
	if code, _, errOut := run(t, "", append([]string{"inbox", "discard", "--id", "d2", "--reason", "x"}, remote...)...); code == 0 || !strings.Contains(errOut, "no dead delivery") {
		t.Fatalf("inbox discard of no dead letter: exit %d, %q; want the server's NOT_FOUND", code, errOut)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) != 2 || f.calls[0].GetInboxId() != "d1" || f.calls[0].GetReason() != "charges a closed account" {
		t.Fatalf("Discard calls: %v; want d1 with its reason, then d2, and nothing for the refused ones", f.calls)
	}
}
