package server

import (
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
)

// TestScheduledKeysAreOnlyThoseNotStartedYet: the keys that tell a delivery signed ahead of
// its secret's start from a forgery are those starting later, never one valid now (it was
// already tried) nor one that has ended since the endpoint was loaded (a delivery signed with
// a retired or expired secret is refused, not retried).
func TestScheduledKeysAreOnlyThoseNotStartedYet(t *testing.T) {
	now := time.Now()
	material := []byte("k")
	keys := []cachedKey{
		{secret: storage.Secret{ID: "valid", NotBefore: now.Add(-time.Hour)}, material: material},
		{secret: storage.Secret{ID: "retired", NotBefore: now.Add(time.Hour), RetiredAt: now.Add(-time.Second)}, material: material},
		{secret: storage.Secret{ID: "expired", NotBefore: now.Add(time.Hour), NotAfter: now.Add(time.Minute)}, material: material},
		{secret: storage.Secret{ID: "later", NotBefore: now.Add(time.Hour)}, material: material},
	}
	var got []string
	for _, k := range (&cachedEndpoint{found: true, keys: keys}).scheduledKeys(now) {
		got = append(got, k.ID)
	}
	if len(got) != 1 || got[0] != "later" {
		t.Errorf("scheduled keys = %v, want [later]", got)
	}
}

// TestUnopenedKeyCountsOnlyWhenValidNow: a secret this server cannot open for want of its
// master key makes a failed delivery UNAVAILABLE (another instance may hold the key) only if
// the secret is valid now; one scheduled for later or already ended could not have signed it,
// and the delivery is refused as a mismatch.
func TestUnopenedKeyCountsOnlyWhenValidNow(t *testing.T) {
	now := time.Now()
	e := &cachedEndpoint{found: true, keys: []cachedKey{
		{secret: storage.Secret{ID: "later", NotBefore: now.Add(time.Hour)}, unknownKey: true},
		{secret: storage.Secret{ID: "retired", RetiredAt: now.Add(-time.Second)}, unknownKey: true},
	}}
	if id := e.unopenedKeyID(now); id != "" {
		t.Errorf("unopened key id = %q with only a scheduled and a retired secret unopened, want none", id)
	}
	e.keys = append(e.keys, cachedKey{secret: storage.Secret{ID: "current", NotBefore: now.Add(-time.Hour)}, unknownKey: true})
	if id := e.unopenedKeyID(now); id != "current" {
		t.Errorf("unopened key id = %q, want current", id)
	}
}
