package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestInboxLeaseBoundsAreUsageErrors: inbox lease refuses, with exit 2 naming the flag and
// before calling anything, a --max above 100 (the most one lease takes) or below 1, and a
// --visibility under a second; inbox extend refuses a --visibility under a second too, and
// inbox dead a --limit above 1000 (the most a page holds) or below 1.
func TestInboxLeaseBoundsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"inbox", "lease", "--max", "101"},
		{"inbox", "lease", "--max", "0"},
		{"inbox", "lease", "--visibility", "999ms"},
		{"inbox", "lease", "--visibility", "0s"},
		{"inbox", "extend", "--id", "i", "--lease", "l", "--visibility", "999ms"},
		{"inbox", "dead", "--limit", "1001"},
		{"inbox", "dead", "--limit", "0"},
	} {
		// Nothing listens on port 1: a command line taken would fail there, with exit 1.
		code, out, errOut := run(t, "", append(args, "--server", "127.0.0.1:1")...)
		if flagName := args[len(args)-2]; code != 2 || out != "" || !strings.Contains(errOut, flagName) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 naming %s", args, code, out, errOut, flagName)
		}
	}
}

// recordingInbox answers Ack and AckMany, each ack OK, and records the calls; AckMany calls
// after the first okCalls fail UNAVAILABLE. ListDeadLetters records the limit asked for.
type recordingInbox struct {
	hookverifyv1.UnimplementedInboxServiceServer
	okCalls int
	mu      sync.Mutex
	acks    int
	ackMany int
	limits  []int32
}

func (r *recordingInbox) Ack(context.Context, *hookverifyv1.AckRequest) (*hookverifyv1.AckResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks++
	return &hookverifyv1.AckResponse{}, nil
}

func (r *recordingInbox) AckMany(_ context.Context, req *hookverifyv1.AckManyRequest) (*hookverifyv1.AckManyResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ackMany++
	if r.ackMany > r.okCalls {
		return nil, status.Error(codes.Unavailable, "store down")
	}
	resp := &hookverifyv1.AckManyResponse{}
	for _, a := range req.GetAcks() {
		resp.Results = append(resp.Results, &hookverifyv1.AckResult{InboxId: a.GetInboxId()})
	}
	return resp, nil
}

func (r *recordingInbox) ListDeadLetters(_ context.Context, req *hookverifyv1.ListDeadLettersRequest) (*hookverifyv1.ListDeadLettersResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limits = append(r.limits, req.GetLimit())
	return &hookverifyv1.ListDeadLettersResponse{}, nil
}

// TestInboxAckLeasedFilePrintsResultsEvenForOne: inbox ack --leased prints a result per
// delivery (AckMany's answer), whatever the number of deliveries in the file, one included: a
// script reads the same JSON for a lease of one as for a lease of several.
func TestInboxAckLeasedFilePrintsResultsEvenForOne(t *testing.T) {
	f := &recordingInbox{okCalls: 1}
	remote := startFakeInbox(t, f)
	leased := `{"deliveries": [{"inboxId": "only-one", "leaseToken": "tok"}]}`
	code, out, errOut := run(t, leased, append([]string{"inbox", "ack", "--leased", "-"}, remote...)...)
	var results struct {
		Results []struct {
			InboxID string `json:"inboxId"`
		} `json:"results"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &results) != nil || len(results.Results) != 1 || results.Results[0].InboxID != "only-one" {
		t.Errorf("inbox ack --leased of one delivery: exit %d, stderr %q, output %s; want exit 0 and its one result", code, errOut, out)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.acks != 0 || f.ackMany != 1 {
		t.Errorf("%d Ack and %d AckMany calls, want one AckMany", f.acks, f.ackMany)
	}
}

// TestInboxAckPrintsTheAcksAnsweredBeforeALaterCallFails: acks split over several calls, the
// second failing, print the results of the first (the acks that went through) and exit 1 saying
// how many were answered, so that a script retries only the rest.
func TestInboxAckPrintsTheAcksAnsweredBeforeALaterCallFails(t *testing.T) {
	f := &recordingInbox{okCalls: 1}
	remote := startFakeInbox(t, f)
	args := []string{"inbox", "ack"}
	for i := range maxAcksPerCall + 1 {
		args = append(args, "--id", fmt.Sprintf("d-%d", i), "--lease", "tok")
	}
	code, out, errOut := run(t, "", append(args, remote...)...)
	var results struct {
		Results []struct {
			InboxID string `json:"inboxId"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &results); err != nil || len(results.Results) != maxAcksPerCall {
		t.Errorf("printed %d results (%v), want the %d of the first call; output %q", len(results.Results), err, maxAcksPerCall, out)
	}
	if want := fmt.Sprintf("the first %d of %d acks were answered", maxAcksPerCall, maxAcksPerCall+1); code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errOut, want)
	}
}

// TestInboxDeadTakesALimitOfAThousand: --limit 1000, the most a page holds, is taken and sent.
func TestInboxDeadTakesALimitOfAThousand(t *testing.T) {
	f := &recordingInbox{}
	remote := startFakeInbox(t, f)
	code, _, errOut := run(t, "", append([]string{"inbox", "dead", "--limit", "1000"}, remote...)...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if code != 0 || len(f.limits) != 1 || f.limits[0] != 1000 {
		t.Errorf("inbox dead --limit 1000: exit %d, stderr %q, limits sent %v; want exit 0 and 1000 sent", code, errOut, f.limits)
	}
}

// oneFailedAck answers AckMany with every ack OK but the one for inbox id "lost", whose lease
// was lost (FAILED_PRECONDITION); Nack records its requests.
type oneFailedAck struct {
	hookverifyv1.UnimplementedInboxServiceServer
	mu    sync.Mutex
	nacks []*hookverifyv1.NackRequest
}

func (*oneFailedAck) AckMany(_ context.Context, req *hookverifyv1.AckManyRequest) (*hookverifyv1.AckManyResponse, error) {
	resp := &hookverifyv1.AckManyResponse{}
	for _, a := range req.GetAcks() {
		res := &hookverifyv1.AckResult{InboxId: a.GetInboxId()}
		if a.GetInboxId() == "lost" {
			res.Code, res.Message = int32(codes.FailedPrecondition), "lease lost"
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}

func (o *oneFailedAck) Nack(_ context.Context, req *hookverifyv1.NackRequest) (*hookverifyv1.NackResponse, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nacks = append(o.nacks, req)
	return &hookverifyv1.NackResponse{}, nil
}

// TestInboxAckFailsWhenASingleAckOfSeveralFails: one ack that did not go through among several
// that did fails the command (exit 1), so that a script does not take a lost lease for done.
func TestInboxAckFailsWhenASingleAckOfSeveralFails(t *testing.T) {
	remote := startFakeInbox(t, &oneFailedAck{})
	code, out, errOut := run(t, "", append([]string{"inbox", "ack", "--id", "fine", "--lease", "a", "--id", "lost", "--lease", "b"}, remote...)...)
	if code != 1 || !strings.Contains(errOut, "1 of 2 acks failed") || !strings.Contains(out, "lease lost") {
		t.Errorf("one of two acks failed: exit %d, stderr %q, output %s; want exit 1 saying 1 of 2 failed", code, errOut, out)
	}
}

// TestInboxNackSendsNotAttempted: --not-attempted reaches the server, which gives the attempt
// back (the delivery cannot go to the dead letters for it); without it the nack spends one.
func TestInboxNackSendsNotAttempted(t *testing.T) {
	f := &oneFailedAck{}
	remote := startFakeInbox(t, f)
	for _, extra := range [][]string{{"--not-attempted"}, nil} {
		args := append([]string{"inbox", "nack", "--id", "i", "--lease", "l"}, extra...)
		if code, _, errOut := run(t, "", append(args, remote...)...); code != 0 {
			t.Fatalf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.nacks) != 2 || !f.nacks[0].GetNotAttempted() || f.nacks[1].GetNotAttempted() {
		t.Errorf("nacks sent %v; want the first not attempted, the second attempted", f.nacks)
	}
}
