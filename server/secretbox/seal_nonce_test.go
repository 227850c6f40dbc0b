package secretbox

import (
	"bytes"
	"encoding/base64"
	"testing"
)

// TestSealUsesAFreshNonceEachTime: AES-GCM under one master key must never reuse a nonce; two
// seals of the same secret for the same row differ, and each opens.
func TestSealUsesAFreshNonceEachTime(t *testing.T) {
	t.Parallel()
	k := mustKeyring(t, bytes.Repeat([]byte{3}, KeySize))
	secret := []byte("whsec_same_secret")
	seen := map[string]bool{}
	nonces := map[string]bool{}
	for range 8 {
		_, sealed, err := k.Seal("ep1", "sec1", secret)
		if err != nil {
			t.Fatal(err)
		}
		if seen[string(sealed)] {
			t.Fatal("two seals of the same secret gave the same sealed value")
		}
		seen[string(sealed)] = true
		nonce := string(sealed[1:13])
		if nonces[nonce] || nonce == string(make([]byte, 12)) {
			t.Fatalf("nonce %x reused or all zero", nonce)
		}
		nonces[nonce] = true
		if plain, err := k.Open(k.CurrentKeyID(), "ep1", "sec1", sealed); err != nil || !bytes.Equal(plain, secret) {
			t.Fatalf("Open: %v", err)
		}
	}
}

// TestMasterKeyMustBeExactly32Bytes: AES-128/192 keys, and longer decoded values, are refused
// both by NewKeyring and by ParseKey (a key file holding 48 bytes is not a master key).
func TestMasterKeyMustBeExactly32Bytes(t *testing.T) {
	t.Parallel()
	for _, n := range []int{16, 24, 31, 33, 48, 64} {
		if _, err := NewKeyring(bytes.Repeat([]byte{1}, n)); err == nil {
			t.Errorf("NewKeyring took a %d-byte key", n)
		}
		if _, err := NewKeyring(bytes.Repeat([]byte{1}, KeySize), bytes.Repeat([]byte{2}, n)); err == nil {
			t.Errorf("NewKeyring took a %d-byte older key", n)
		}
		if _, err := ParseKey(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, n))); err == nil {
			t.Errorf("ParseKey took a %d-byte key", n)
		}
	}
}
