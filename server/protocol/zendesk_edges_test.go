package protocol

import (
	"strings"
	"testing"
)

// An event-subscription body whose "id" is the empty string names no event: the identity falls
// back to the body hash, never "".
func TestZendeskEmptyBodyIDFallsBackToBodyHash(t *testing.T) {
	t.Parallel()
	p := Zendesk()
	keys := keysFor(t, p, zdSecret)
	ts := fixedNow.UTC().Format("2006-01-02T15:04:05Z")
	body := `{"type":"zen:event-type:user.created","id":""}`
	req := withoutHeader(zdReq(zdSig(zdSecret, ts, body), ts, body), zendeskInvocationHeader)
	if got, want := eventIDOf(t, p, keys, req, fixedNow), bodySHA256ID([]byte(body)); got != want {
		t.Fatalf("EventID = %q, want %q", got, want)
	}
}

// X-Zendesk-Webhook-Invocation-Id is the identity up to 400 bytes; a longer one is not used
// (the body's event id is).
func TestZendeskInvocationIDUpTo400BytesIsTheIdentity(t *testing.T) {
	t.Parallel()
	p := Zendesk()
	keys := keysFor(t, p, zdSecret)
	ts := fixedNow.UTC().Format("2006-01-02T15:04:05Z")
	req := zdReq(zdSig(zdSecret, ts, zdBody), ts, zdBody)
	for _, tc := range []struct {
		invocation, want string
	}{
		{strings.Repeat("7", 64), strings.Repeat("7", 64)},
		{strings.Repeat("7", 400), strings.Repeat("7", 400)},
		{strings.Repeat("7", 401), "cbe4028c-7239-495d-b020-f22348516046"},
	} {
		if got := eventIDOf(t, p, keys, withHeader(req, zendeskInvocationHeader, tc.invocation), fixedNow); got != tc.want {
			t.Fatalf("invocation id of %d bytes: EventID = %q, want %q", len(tc.invocation), got, tc.want)
		}
	}
}
