package secretbox

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func mustKeyring(t *testing.T, keys ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(keys[0], keys[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, KeySize)
	k := mustKeyring(t, key)
	secret := []byte("whsec_super_secret_value")
	keyID, sealed, err := k.Seal("ep1", "sec1", secret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, secret) {
		t.Fatal("sealed value contains the plaintext")
	}
	got, err := k.Open(keyID, "ep1", "sec1", sealed)
	if err != nil || !bytes.Equal(got, secret) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	t.Run("bound to its row", func(t *testing.T) {
		if _, err := k.Open(keyID, "ep1", "sec2", sealed); !errors.Is(err, ErrOpen) {
			t.Fatalf("other secret id: %v", err)
		}
		if _, err := k.Open(keyID, "ep2", "sec1", sealed); !errors.Is(err, ErrOpen) {
			t.Fatalf("other endpoint: %v", err)
		}
	})
	t.Run("tampered", func(t *testing.T) {
		for i := range sealed {
			bad := bytes.Clone(sealed)
			bad[i] ^= 1
			if _, err := k.Open(keyID, "ep1", "sec1", bad); err == nil {
				t.Fatalf("flipping byte %d still opens", i)
			}
		}
		if _, err := k.Open(keyID, "ep1", "sec1", sealed[:5]); !errors.Is(err, ErrOpen) {
			t.Fatalf("truncated: %v", err)
		}
	})
	t.Run("unknown key", func(t *testing.T) {
		other := mustKeyring(t, bytes.Repeat([]byte{8}, KeySize))
		if _, err := other.Open(keyID, "ep1", "sec1", sealed); !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("older key still opens", func(t *testing.T) {
		rotated := mustKeyring(t, bytes.Repeat([]byte{9}, KeySize), key)
		if got, err := rotated.Open(keyID, "ep1", "sec1", sealed); err != nil || !bytes.Equal(got, secret) {
			t.Fatalf("Open with older key = %q, %v", got, err)
		}
		if rotated.CurrentKeyID() == keyID {
			t.Fatal("current key should be the new one")
		}
	})
}

func TestParseKey(t *testing.T) {
	t.Parallel()
	good := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, KeySize))
	if _, err := ParseKey(" " + good + "\n"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "not base64!!", base64.StdEncoding.EncodeToString([]byte("short"))} {
		_, err := ParseKey(bad)
		if err == nil {
			t.Fatalf("ParseKey(%q) accepted", bad)
		}
		if bad != "" && strings.Contains(err.Error(), bad) {
			t.Fatalf("error echoes the input: %v", err)
		}
	}
	if _, err := NewKeyring([]byte("short")); err == nil {
		t.Fatal("short key accepted")
	}
}

func TestLoadOrCreateKeyFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "master.key")
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created || len(key) != KeySize {
		t.Fatalf("create: %v created=%v len=%d", err, created, len(key))
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", info.Mode().Perm())
	}
	again, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(again, key) {
		t.Fatalf("reload: %v created=%v same=%v", err, created, bytes.Equal(again, key))
	}
}

func TestFingerprint(t *testing.T) {
	a := Fingerprint("ep-1", []byte("whsec_abc"))
	if len(a) != len("fp_")+20 || a[:3] != "fp_" {
		t.Fatalf("fingerprint %q: want fp_ and 20 hex digits", a)
	}
	if again := Fingerprint("ep-1", []byte("whsec_abc")); again != a {
		t.Fatalf("fingerprint not stable: %q then %q", a, again)
	}
	if other := Fingerprint("ep-1", []byte("whsec_abd")); other == a {
		t.Fatal("different material, same fingerprint")
	}
	if other := Fingerprint("ep-2", []byte("whsec_abc")); other == a {
		t.Fatal("different endpoint, same fingerprint")
	}
	if strings.Contains(a, hex.EncodeToString([]byte("whsec_abc"))) {
		t.Fatal("fingerprint contains the material")
	}
	// Pinned to a value computed independently (Python's hashlib.pbkdf2_hmac), so that a
	// change of derivation, which would orphan every stored fingerprint, is a conscious one.
	if got, want := Fingerprint("ep-1", []byte("secret")), "fp_fd53b92aa945630c4b92"; got != want {
		t.Fatalf("Fingerprint(ep-1, secret) = %q, want %q", got, want)
	}
}
