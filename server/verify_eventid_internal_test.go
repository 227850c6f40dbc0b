package server

import (
	"strings"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestEventIDUpToTheBoundIsClaimed: an event id of exactly maxEventIDBytes bytes is claimed;
// one byte more is MALFORMED_PAYLOAD.
func TestEventIDUpToTheBoundIsClaimed(t *testing.T) {
	if reason, detail := checkEventID(strings.Repeat("e", maxEventIDBytes)); detail != "" {
		t.Errorf("an event id of %d bytes: %s %q, want it claimed", maxEventIDBytes, reason, detail)
	}
	reason, detail := checkEventID(strings.Repeat("e", maxEventIDBytes+1))
	if detail == "" || reason != hookverifyv1.RejectReason_REJECT_REASON_MALFORMED_PAYLOAD {
		t.Errorf("an event id of %d bytes: %s %q, want MALFORMED_PAYLOAD", maxEventIDBytes+1, reason, detail)
	}
}
