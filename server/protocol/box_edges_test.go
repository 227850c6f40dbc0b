package protocol

import (
	"testing"
	"time"
)

// A webhook event whose "id" is the empty string names no event: the identity falls back to
// the body hash, never "".
func TestBoxEmptyBodyIDFallsBackToBodyHash(t *testing.T) {
	t.Parallel()
	p := Box()
	keys := keysFor(t, p, boxKey1)
	ts := fixedNow.UTC().Format(time.RFC3339)
	body := `{"type":"webhook_event","id":"","trigger":"FILE.UPLOADED"}`
	req := boxReq(body, ts, boxSig(boxKey1, body, ts), "\x00")
	if got, want := eventIDOf(t, p, keys, req, fixedNow), bodySHA256ID([]byte(body)); got != want {
		t.Fatalf("EventID = %q, want %q", got, want)
	}
}
