package server_test

import (
	"encoding/json"
	"testing"
)

// TestDuplicateReplyBodySaysDuplicate proves that with a protocol's default reply the provider
// is told which of the two a 200 is: {"status":"accepted"} for a first delivery and
// {"status":"duplicate"} for a redelivery, which is what an operator reading the provider's
// delivery log goes by.
func TestDuplicateReplyBodySaysDuplicate(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e := newEnv(t, b)
		p := githubProvider
		secret, _ := e.setup(t, p, "gh")
		req := e.deliver(t, p, "gh", eventID(p), secret)
		first := e.accept(t, req)
		again := e.duplicate(t, req, first)
		for _, c := range []struct {
			what string
			body []byte
			want string
		}{{"first delivery", first.GetReply().GetBody(), "accepted"}, {"redelivery", again.GetReply().GetBody(), "duplicate"}} {
			var got struct {
				Status string `json:"status"`
			}
			if err := json.Unmarshal(c.body, &got); err != nil || got.Status != c.want {
				t.Fatalf("%s reply body %q (%v), want status %q", c.what, c.body, err, c.want)
			}
		}
	})
}
