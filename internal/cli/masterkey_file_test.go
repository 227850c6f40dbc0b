package cli

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/server/secretbox"
)

// TestKeyringRemovesStaleTemporaryKeyFiles: a crash between writing the generated key to its
// temporary file and linking it into place left a hidden .master.key.new-* file holding a
// key in plain text, forever. A start removes those old enough not to be another starting
// instance's, and names them in the log (never their content); a fresh one is left.
func TestKeyringRemovesStaleTemporaryKeyFiles(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv(oldMasterKeysEnv, "")
	dir := t.TempDir()
	content := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)) + "\n"
	stale := filepath.Join(dir, ".master.key.new-123")
	fresh := filepath.Join(dir, ".master.key.new-456")
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg := &storeConfig{dataDir: dir}
	if _, err := cfg.keyring(slog.New(slog.NewJSONHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a temporary key file an hour old is still there (%v)", err)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a fresh temporary key file (another instance starting now) was removed: %v", err)
	}
	if !strings.Contains(logs.String(), ".master.key.new-123") {
		t.Errorf("the removal is not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), strings.TrimSpace(content)) || strings.Contains(logs.String(), "BwcHBwcH") {
		t.Errorf("the log holds key material:\n%s", logs.String())
	}
}

// TestFailedStartLeavesTheKeyAnotherInstanceUses: two instances start at once on a fresh data
// directory; one generates master.key, the other reads it and serves (and seals new secrets
// under it). The generator then fails before its check (the other took the port) and moved
// the file aside, from under the instance using it: the next start generated another key,
// refused over the secrets sealed meanwhile, and pointed at its own aside file, while the key
// that opens them sat in an older "unused" file. The key stays while another instance holds it.
func TestFailedStartLeavesTheKeyAnotherInstanceUses(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	t.Setenv(oldMasterKeysEnv, "")
	dir := t.TempDir()
	var logs bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	gen := &storeConfig{dataDir: dir}
	genRing, err := gen.keyring(log)
	if err != nil {
		t.Fatal(err)
	}
	defer gen.close()
	gk := gen.generated()
	if gk == nil {
		t.Fatal("the first start generated no key")
	}
	other := &storeConfig{dataDir: dir}
	otherRing, err := other.keyring(log)
	if err != nil {
		t.Fatal(err)
	}
	defer other.close()
	if other.generated() != nil || otherRing.CurrentKeyID() != genRing.CurrentKeyID() {
		t.Fatal("the second start did not read the generated key")
	}
	abandonGeneratedKey(log, gk) // the generator's start fails before its check
	key, err := secretbox.ReadKeyFile(filepath.Join(dir, "master.key"))
	if err != nil || secretbox.KeyID(key) != otherRing.CurrentKeyID() {
		t.Fatalf("the key the running instance uses was moved aside from under it (%v); log:\n%s", err, logs.String())
	}
}

// TestKeyringErrorsHoldNoKeyMaterial: a key given wrong in the variable, the flag's file or
// the old keys' variable is refused with an error naming where, never holding the value.
func TestKeyringErrorsHoldNoKeyMaterial(t *testing.T) {
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{0x5a}, 31))
	notB64 := "s3cr3t-passphrase-not-base64!"
	dir := t.TempDir()
	file := filepath.Join(dir, "k")
	for _, tc := range []struct {
		name, env, old, file, want string
	}{
		{"env short", short, "", "", "$" + masterKeyEnv},
		{"env not base64", notB64, "", "", "$" + masterKeyEnv},
		{"env blank", "  \n", "", "", "$" + masterKeyEnv},
		{"file short", "", "", short + "\n", "--master-key-file"},
		{"file passphrase", "", "", notB64 + "\n", "--master-key-file"},
		{"old not base64", base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{1}, 32)), "," + notB64, "", "$" + oldMasterKeysEnv},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(masterKeyEnv, tc.env)
			t.Setenv(oldMasterKeysEnv, tc.old)
			cfg := &storeConfig{dataDir: t.TempDir()}
			if tc.file != "" {
				if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
					t.Fatal(err)
				}
				cfg.masterKeyFile = file
			}
			var logs bytes.Buffer
			_, err := cfg.keyring(slog.New(slog.NewJSONHandler(&logs, nil)))
			defer cfg.close()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("keyring: %v, want an error naming %s", err, tc.want)
			}
			for _, secret := range []string{short, notB64, "passphrase", "WlpaWlpa"} {
				if strings.Contains(err.Error(), secret) || strings.Contains(logs.String(), secret) {
					t.Fatalf("key material in the error or log: %v\n%s", err, logs.String())
				}
			}
		})
	}
}
