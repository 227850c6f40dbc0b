package server_test

import (
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestScopedAckManyAtTheBatchLimitIsChecked: AckMany of exactly maxAckBatch (100) acks is a
// valid batch the handler carries out, so a caller scoped to some endpoints is refused when
// one of them is out of scope; only a batch over the limit, which the handler refuses as
// malformed without acking anything, skips the check.
func TestScopedAckManyAtTheBatchLimitIsChecked(t *testing.T) {
	t.Parallel()
	e := newAuthEnv(t)
	inbox := hookverifyv1.NewInboxServiceClient(e.dial(t, nil))
	req := &hookverifyv1.AckManyRequest{}
	for _, id := range slices.Repeat([]string{e.inboxIDs["globex-orders"]}, 100) {
		req.Acks = append(req.Acks, &hookverifyv1.AckRequest{InboxId: id, LeaseToken: "lease_wrong"})
	}
	_, err := inbox.AckMany(withToken(t.Context(), e.tokens["inbox-acme"]), req)
	refusedWith(t, "AckMany of 100 out-of-scope acks by inbox:acme-*", err, codes.PermissionDenied)
}

// TestScopedDeliveryCheckDuringAnOutageIsUnavailable: a worker scoped to some endpoints acks a
// delivery while the store cannot say which endpoint it belongs to; it must be told
// UNAVAILABLE (retry later), not PERMISSION_DENIED, which says its scopes will never allow it.
func TestScopedDeliveryCheckDuringAnOutageIsUnavailable(t *testing.T) {
	t.Parallel()
	e, st := newAuthEnvWithOutage(t)
	inbox := hookverifyv1.NewInboxServiceClient(e.dial(t, nil))
	ctx := withToken(t.Context(), e.tokens["inbox-acme"])
	ack := &hookverifyv1.AckRequest{InboxId: e.inboxIDs["acme-orders"], LeaseToken: "lease_wrong"}
	_, err := inbox.Ack(ctx, ack)
	allowed(t, "Ack in scope", err)
	st.down.Store(true)
	_, err = inbox.Ack(ctx, ack)
	refusedWith(t, "Ack in scope while the store is down", err, codes.Unavailable)
	_, err = inbox.AckMany(ctx, &hookverifyv1.AckManyRequest{Acks: []*hookverifyv1.AckRequest{ack}})
	refusedWith(t, "AckMany in scope while the store is down", err, codes.Unavailable)
}
