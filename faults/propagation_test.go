package faults

import (
	"context"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/pgtest"
	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
)

// TestRotationReachesOtherProcesses runs two server processes on one PostgreSQL database with
// --cache-ttl 1s. A rotation and a retirement made through one reach the other within the
// bound, with no restart: the other accepts the new secret and rejects the retired one. The
// wait is polled; it must end within the TTL plus a slack for polling and a loaded machine
// (the cached entry expires at most one TTL after the change, and the first call after that
// reloads it), and the elapsed time is logged.
func TestRotationReachesOtherProcesses(t *testing.T) {
	t.Parallel()
	const ttl = time.Second
	url := pgtest.Shared(t).NewDatabase(t)
	keyFile := masterKeyFile(t)
	args := append(postgresArgs(url, keyFile), "--cache-ttl", ttl.String())
	first, second := startProcess(t, "rotating", args...), startProcess(t, "other", args...)
	admin, other := first.dial(), second.dial()
	defer admin.Close()
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	old := createEndpoint(t, admin, "rotated", "github")
	verdict := func(e endpoint, eventID string) hookverifyv1.Verdict {
		t.Helper()
		resp, err := other.Verifier.Verify(ctx, e.delivery(t, eventID))
		if err != nil {
			t.Fatalf("Verify through the other process: %v", err)
		}
		return resp.GetVerdict()
	}
	// The other process has the old secret cached.
	if v := verdict(old, "evt-warm"); v != hookverifyv1.Verdict_VERDICT_ACCEPTED {
		t.Fatalf("before the rotation: %v", v)
	}
	signing, verifying, err := old.provider.ExampleSecret()
	if err != nil {
		t.Fatal(err)
	}
	rotated := old
	rotated.secret = signing
	listed, err := admin.Admin.ListSecrets(ctx, &hookverifyv1.ListSecretsRequest{EndpointId: old.id})
	if err != nil || len(listed.GetSecrets()) != 1 {
		t.Fatalf("ListSecrets = %v, %v", listed, err)
	}
	if _, err := admin.Admin.RotateSecret(ctx, &hookverifyv1.RotateSecretRequest{EndpointId: old.id, Secret: verifying}); err != nil {
		t.Fatalf("RotateSecret: %v", err)
	}
	if _, err := admin.Admin.RetireSecret(ctx, &hookverifyv1.RetireSecretRequest{EndpointId: old.id, SecretId: listed.GetSecrets()[0].GetId()}); err != nil {
		t.Fatalf("RetireSecret: %v", err)
	}
	changed := time.Now()

	// Slack beyond the TTL: one poll interval, and scheduling on a machine busy with the rest of
	// the suite. Breaking the bound (no expiry, a refresh only every few TTLs) still fails.
	const slack = ttl/10 + 1500*time.Millisecond
	deadline := changed.Add(10 * ttl)
	for n := 0; ; n++ {
		newOK := verdict(rotated, "evt-new-"+time.Now().Format(time.RFC3339Nano)) == hookverifyv1.Verdict_VERDICT_ACCEPTED
		oldRefused := verdict(old, "evt-old-"+time.Now().Format(time.RFC3339Nano)) == hookverifyv1.Verdict_VERDICT_REJECTED
		if newOK && oldRefused {
			took := time.Since(changed)
			t.Logf("the other process applied the rotation %v after it was made (bound %v)", took.Round(time.Millisecond), ttl)
			if took > ttl+slack {
				t.Fatalf("the rotation took %v to reach the other process, beyond the bound %v (+%v slack)", took, ttl, slack)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v after the rotation the other process accepts the new secret: %v, refuses the retired one: %v", time.Since(changed), newOK, oldRefused)
		}
		time.Sleep(ttl / 10)
	}
	// From then on it stays that way.
	for i := range 3 {
		if v := verdict(old, "evt-old-after-"+string(rune('a'+i))); v != hookverifyv1.Verdict_VERDICT_REJECTED {
			t.Fatalf("the retired secret is accepted again: %v", v)
		}
	}
}
