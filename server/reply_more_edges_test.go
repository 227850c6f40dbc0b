package server

import (
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server/protocol"
)

// TestDeliverysOwnSuccessReplyComesBeforeItsProtocols pins successReply's order: the reply a
// delivery asks for (protocol.Result.SuccessReply) is sent in place of its protocol's
// (protocol.Protocol.SuccessReply), as protocol.Result documents; the protocol's is the
// fallback, hookverify's JSON the last one.
func TestDeliverysOwnSuccessReplyComesBeforeItsProtocols(t *testing.T) {
	p := &protocol.Protocol{Name: "both", SuccessReply: &protocol.Reply{Status: 200, Body: []byte("protocol")}}
	own := &protocol.Reply{Status: 204}
	if got := successReply(p, own, hookverifyv1.Verdict_VERDICT_ACCEPTED); got.GetStatus() != 204 || len(got.GetBody()) != 0 {
		t.Fatalf("reply with the delivery's own: %d %q, want 204 without a body", got.GetStatus(), got.GetBody())
	}
	if got := successReply(p, nil, hookverifyv1.Verdict_VERDICT_DUPLICATE); got.GetStatus() != 200 || string(got.GetBody()) != "protocol" {
		t.Fatalf("reply without the delivery's own: %d %q, want the protocol's", got.GetStatus(), got.GetBody())
	}
}
