package secretbox

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func mustKeyring(t testing.TB, keys ...[]byte) *Keyring {
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

// TestLoadOrCreateKeyFileSyncsItsDirectory proves that a generated key file survives a crash:
// fsyncing the file makes its content durable, but not its name, which lives in the
// directory. Without syncing the directory, a power loss after secrets were sealed under the
// new key could leave no key file, and the next start would generate another key that opens
// none of them.
func TestLoadOrCreateKeyFileSyncsItsDirectory(t *testing.T) {
	// Not parallel: it replaces syncDir.
	var synced []string
	orig := syncDir
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return orig(dir)
	}
	t.Cleanup(func() { syncDir = orig })
	dir := filepath.Join(t.TempDir(), "data")
	if _, created, err := LoadOrCreateKeyFile(filepath.Join(dir, "master.key")); err != nil || !created {
		t.Fatalf("LoadOrCreateKeyFile: created=%v, %v", created, err)
	}
	if !slices.Contains(synced, dir) {
		t.Fatalf("directories synced: %q, want %q among them", synced, dir)
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

// FuzzParseKey: the master key comes from a file or the environment. Any text gives a 32-byte
// key or an error that never quotes the text; an accepted key re-encodes to the same key.
func FuzzParseKey(f *testing.F) {
	f.Add(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, KeySize)) + "\n")
	f.Add(base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{7}, KeySize)))
	f.Add("not base64 at all, and long enough to be noticed")
	f.Add("")
	f.Fuzz(func(t *testing.T, encoded string) {
		key, err := ParseKey(encoded)
		if err != nil {
			if trimmed := strings.TrimSpace(encoded); len(trimmed) >= 8 && strings.Contains(err.Error(), trimmed) {
				t.Fatalf("error %q quotes the key text", err)
			}
			return
		}
		if len(key) != KeySize {
			t.Fatalf("accepted a %d-byte key", len(key))
		}
		again, err := ParseKey(base64.StdEncoding.EncodeToString(key))
		if err != nil || !bytes.Equal(again, key) {
			t.Fatalf("re-encoded key does not parse back: %v", err)
		}
	})
}

// FuzzOpen: sealed values are read from the database, which may be corrupted or, for anyone
// able to write it, chosen. Opening any bytes under any ids never panics and fails with
// ErrOpen or ErrUnknownKey unless the bytes are exactly what Seal produced for those ids; a
// value sealed for one endpoint and secret opens only for them, to the same plaintext.
func FuzzOpen(f *testing.F) {
	k := bytes.Repeat([]byte{1}, KeySize)
	kr := mustKeyring(f, k, bytes.Repeat([]byte{2}, KeySize))
	_, sealed, err := kr.Seal("ep-1", "sec-1", []byte("whsec_abc"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(kr.CurrentKeyID(), "ep-1", "sec-1", sealed, []byte("whsec_abc"), uint16(0))
	f.Add("nope", "ep-1", "sec-1", []byte{1}, []byte{}, uint16(5))
	f.Add(KeyID(bytes.Repeat([]byte{2}, KeySize)), "ep-1\x00sec", "1", []byte{}, []byte("x"), uint16(40))
	f.Fuzz(func(t *testing.T, keyID, endpointID, secretID string, data, plaintext []byte, pos uint16) {
		if plain, err := kr.Open(keyID, endpointID, secretID, data); err == nil {
			// Only the seed opens: what Seal made (in the process that generated the seed corpus,
			// so with another random nonce than this process's sealed).
			if string(plain) != "whsec_abc" || endpointID != "ep-1" || secretID != "sec-1" {
				t.Fatalf("fuzzed bytes opened to %d bytes", len(plain))
			}
		} else if !errors.Is(err, ErrOpen) && !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("Open: %v", err)
		}
		id, sealed, err := kr.Seal(endpointID, secretID, plaintext)
		if err != nil {
			t.Fatal(err)
		}
		got, err := kr.Open(id, endpointID, secretID, sealed)
		if err != nil || !bytes.Equal(got, plaintext) {
			t.Fatalf("round trip: %v", err)
		}
		if endpointID != "" && !strings.ContainsRune(endpointID+secretID, 0) {
			// Moving a byte between the ids must not let the value open for another row (ids
			// never hold NUL, the separator of the additional data).
			if _, err := kr.Open(id, endpointID[1:], string(endpointID[0])+secretID, sealed); err == nil {
				t.Fatal("opened for another (endpoint, secret) pair")
			}
		}
		bad := append([]byte(nil), sealed...)
		bad[int(pos)%len(bad)] ^= 0x01
		if _, err := kr.Open(id, endpointID, secretID, bad); err == nil {
			t.Fatal("a sealed value with a flipped bit opened")
		}
	})
}

// TestLoadOrCreateKeyFileConcurrently: processes starting at once on one data directory must
// all get the one key written, never an error from reading the file before its creator wrote
// the key into it (as when the file was created empty in place, then filled).
func TestLoadOrCreateKeyFileConcurrently(t *testing.T) {
	for round := range 200 {
		path := filepath.Join(t.TempDir(), "master.key")
		const n = 8
		keys := make([][]byte, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				keys[i], _, errs[i] = LoadOrCreateKeyFile(path)
			})
		}
		close(start)
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: caller %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: callers got different keys", round)
			}
		}
	}
}
