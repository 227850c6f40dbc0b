package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// listingPage is one printed page of endpoint list or audit.
type listingPage struct {
	Endpoints []struct {
		ID string `json:"id"`
	} `json:"endpoints"`
	Events []struct {
		EndpointID string `json:"endpointId"`
	} `json:"events"`
	NextPageToken string `json:"nextPageToken"`
}

func (p listingPage) ids() string {
	var ids []string
	for _, e := range p.Endpoints {
		ids = append(ids, e.ID)
	}
	for _, e := range p.Events {
		ids = append(ids, e.EndpointID)
	}
	return strings.Join(ids, ",")
}

// TestEndpointListAndAuditPages: endpoint list printed every endpoint in one answer, which a
// platform with an endpoint per tenant could not receive, and audit one page with no way on
// but --since, which skips or repeats actions sharing a time. Both print a page with its next
// page token (and a note on standard error that more follow), take --page-token to list the
// page after it, and --all follows the tokens to the end, a JSON document per page, as inbox
// dead does.
func TestEndpointListAndAuditPages(t *testing.T) {
	remote, must := startTestServer(t)
	for _, id := range []string{"e3", "e1", "e5", "e2", "e4"} {
		must("", "endpoint", "create", "--id", id, "--provider", "github")
	}
	list := func(args ...string) ([]listingPage, string) {
		t.Helper()
		code, out, errOut := run(t, "", append(args, remote...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %q", args, code, errOut)
		}
		var pages []listingPage
		dec := json.NewDecoder(strings.NewReader(out))
		for dec.More() {
			var p listingPage
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("%v printed %q: %v", args, out, err)
			}
			pages = append(pages, p)
		}
		return pages, errOut
	}
	for _, cmd := range [][]string{{"endpoint", "list"}, {"audit"}} {
		with := func(args ...string) []string { return append(append([]string{}, cmd...), args...) }
		// All on one page: the output is as it was, with no token and no note.
		if got, errOut := list(with()...); len(got) != 1 || got[0].ids() != "e3,e1,e5,e2,e4" && got[0].ids() != "e1,e2,e3,e4,e5" ||
			got[0].NextPageToken != "" || errOut != "" {
			t.Fatalf("%v: %+v, stderr %q; want every endpoint on one page, no token, no note", cmd, got, errOut)
		}
		first, errOut := list(with("--limit", "2")...)
		if len(first) != 1 || len(first[0].ids()) != len("e1,e2") || first[0].NextPageToken == "" || !strings.Contains(errOut, "--all") {
			t.Fatalf("%v --limit 2: %+v, stderr %q; want two, a next page token and a note naming --all", cmd, first, errOut)
		}
		second, _ := list(with("--limit", "2", "--page-token", first[0].NextPageToken)...)
		if len(second) != 1 || len(second[0].ids()) != len("e1,e2") || second[0].NextPageToken == "" {
			t.Fatalf("%v --page-token: %+v, want the next two and a token", cmd, second)
		}
		all, errOut := list(with("--limit", "2", "--all")...)
		var ids []string
		for _, p := range all {
			ids = append(ids, p.ids())
		}
		if len(all) != 3 || all[0].ids() != first[0].ids() || all[1].ids() != second[0].ids() || all[2].NextPageToken != "" || errOut != "" ||
			len(strings.Join(ids, ",")) != len("e1,e2,e3,e4,e5") {
			t.Fatalf("%v --all: %+v, stderr %q; want three pages, five in all, the last with no token", cmd, all, errOut)
		}
		if code, _, errOut := run(t, "", append(with("--page-token", "nope"), remote...)...); code == 0 || !strings.Contains(errOut, "page_token") {
			t.Fatalf("%v with a bad token: exit %d, %q; want the server's error", cmd, code, errOut)
		}
		for _, limit := range []string{"0", "1001"} {
			if code, _, errOut := run(t, "", append(with("--limit", limit), remote...)...); code != 2 || !strings.Contains(errOut, "--limit") {
				t.Errorf("%v --limit %s: exit %d, stderr %q", cmd, limit, code, errOut)
			}
		}
	}
}
