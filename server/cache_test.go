package server_test

import (
	"testing"
	"time"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/server"
)

// TestSecretChangesReachOtherInstances runs two servers on one database, each with its own
// endpoint cache. A rotation and a retirement made through one reach the other once the cache
// TTL has passed since they committed, without a restart, though its entry stays in use;
// through the instance that made them they apply at once.
func TestSecretChangesReachOtherInstances(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		const ttl = 300 * time.Millisecond
		e := newEnvWith(t, b, func(o *server.Options) { o.CacheTTL = ttl })
		other := e.start(t, e.store)
		p := githubProvider
		oldSecret, oldID := e.setup(t, p, "shared")
		// Warm the other instance's cache with the old secret.
		other.accept(t, e.deliver(t, p, "shared", eventID(p), oldSecret))

		newSecret := p.newSecret()
		if _, err := e.admin.RotateSecret(t.Context(), &hookverifyv1.RotateSecretRequest{EndpointId: "shared", Secret: newSecret}); err != nil {
			t.Fatalf("RotateSecret: %v", err)
		}
		if _, err := e.admin.RetireSecret(t.Context(), &hookverifyv1.RetireSecretRequest{EndpointId: "shared", SecretId: oldID}); err != nil {
			t.Fatalf("RetireSecret: %v", err)
		}
		committed := time.Now()
		// The instance that made the change applies it at once.
		e.accept(t, e.deliver(t, p, "shared", eventID(p), newSecret))
		e.reject(t, e.deliver(t, p, "shared", eventID(p), oldSecret), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)

		// The other one once the TTL has passed since the change committed, though deliveries
		// meanwhile keep its entry in use (refreshed ahead of its expiry, as in steady
		// traffic): whatever they get, the first one after the TTL sees the change. The wait is
		// a lower bound only, so a slow machine cannot fail this.
		for time.Since(committed) <= ttl {
			other.verify(t, e.deliver(t, p, "shared", eventID(p), oldSecret))
			time.Sleep(ttl / 10)
		}
		time.Sleep(10 * time.Millisecond)
		other.reject(t, e.deliver(t, p, "shared", eventID(p), oldSecret), hookverifyv1.RejectReason_REJECT_REASON_SIGNATURE_MISMATCH)
		other.accept(t, e.deliver(t, p, "shared", eventID(p), newSecret))
	})
}
