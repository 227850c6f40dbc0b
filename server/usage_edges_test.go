package server_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	hookverifyv1 "github.com/hookverify/hookverify/proto/hookverify/v1"
	"github.com/hookverify/hookverify/storage"
)

// failingSecretUses is a store whose next MarkSecretsUsed fails, once per failNext set.
type failingSecretUses struct {
	storage.Store
	failNext atomic.Bool
}

func newFailingSecretUses(st storage.Store) *failingSecretUses { return &failingSecretUses{Store: st} }

func (f *failingSecretUses) MarkSecretsUsed(ctx context.Context, uses []storage.SecretUse) error {
	if f.failNext.CompareAndSwap(true, false) {
		return errors.New("database unreachable")
	}
	return f.Store.MarkSecretsUsed(ctx, uses)
}

// TestSecretUseIsWrittenByTheFlushAfterAFailedOne proves that a secret's last use whose write
// failed is kept and written by the next flush, with the time of that use: dropped, the secret
// looked never used (or used long ago) until its next delivery, and an operator deciding which
// secret can be retired could retire the one the provider still signs with.
func TestSecretUseIsWrittenByTheFlushAfterAFailedOne(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, b backend) {
		e, st := newEnvOver(t, b, newFailingSecretUses)
		e.instance = e.start(t, st)
		p := githubProvider
		secret, _ := e.setup(t, p, "used")
		usedAt := e.clock.Now()
		e.accept(t, e.deliver(t, p, "used", eventID(p), secret))

		st.failNext.Store(true)
		if err := e.srv.FlushSecretUses(t.Context()); err == nil {
			t.Fatal("FlushSecretUses reported success for a write that failed")
		}
		if err := e.srv.FlushSecretUses(t.Context()); err != nil {
			t.Fatalf("FlushSecretUses: %v", err)
		}
		resp, err := e.admin.ListSecrets(t.Context(), &hookverifyv1.ListSecretsRequest{EndpointId: "used"})
		if err != nil || len(resp.GetSecrets()) != 1 {
			t.Fatalf("ListSecrets = %v, %v", resp, err)
		}
		if got := resp.GetSecrets()[0].GetLastUsedTime(); got == nil || !got.AsTime().Equal(usedAt) {
			t.Fatalf("last use after a failed write and a good one: %v, want %v", got, usedAt)
		}
	})
}
