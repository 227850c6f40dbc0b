package storagetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// checkSkippingStore is a store with the fault the secret-check cases are there to find: it
// stores a secret without running the SecretCheck it is given.
type checkSkippingStore struct{ storage.Store }

func (s checkSkippingStore) AddSecret(ctx context.Context, sec storage.Secret, _ storage.SecretCheck) error {
	return s.Store.AddSecret(ctx, sec, nil)
}

func (s checkSkippingStore) RotateSecret(ctx context.Context, sec storage.Secret, expireAt time.Time, _ storage.SecretCheck) ([]storage.Secret, error) {
	return s.Store.RotateSecret(ctx, sec, expireAt, nil)
}

// TestSecretChecksFailAStoreThatSkipsTheCheck: run against a store that never calls the
// check, the cases must fail, each saying why. The case that holds the secret's transaction
// open inside its check waited for the check to be called and nothing else, so it hung until
// go test's timeout, which reports none of the suite's failures, only goroutine stacks. The
// suite runs in a child process so that a hang is seen as one.
func TestSecretChecksFailAStoreThatSkipsTheCheck(t *testing.T) {
	if os.Getenv("HOOKVERIFY_SKIPPING_STORE") == "1" {
		h := harness{started: new(sync.Map), newStore: func(t *testing.T) func(t *testing.T) storage.Store {
			path := filepath.Join(t.TempDir(), "hookverify.db")
			return func(t *testing.T) storage.Store {
				s, err := sqlite.Open(t.Context(), path)
				if err != nil {
					t.Fatal(err)
				}
				return checkSkippingStore{s}
			}
		}}
		testSecretChecks(t, h)
		return
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestSecretChecksFailAStoreThatSkipsTheCheck$", "-test.timeout=30s")
	cmd.Env = append(os.Environ(), "HOOKVERIFY_SKIPPING_STORE=1")
	out, err := cmd.CombinedOutput()
	switch {
	case bytes.Contains(out, []byte("test timed out")):
		t.Fatalf("the secret-check cases hung on a store that skips the check:\n%.3000s", out)
	case err == nil:
		t.Fatalf("the secret-check cases passed a store that skips the check:\n%s", out)
	}
	if !bytes.Contains(out, []byte("ended without")) {
		t.Errorf("no case said the store never ran the check:\n%s", out)
	}
}
