package cli

import (
	"encoding/base64"
	"path/filepath"
	"testing"

	"github.com/hookverify/hookverify/server/secretbox"
)

// TestMasterKeyFileFlagWinsOverEnvironment: --master-key-file, given on the command line, is
// the key serve uses even when $HOOKVERIFY_MASTER_KEY is also set. The flag's help says the
// variable is its default, and the master-key rotation runbook restarts the instances with
// --master-key-file new.key --old-master-key-file old.key: where the old key also sits in the
// environment (a unit file, a container spec), the new key must not be silently ignored, or
// the rotation seals nothing under it, rekey reports every secret under the old key, and
// dropping the old key later locks every secret away.
func TestMasterKeyFileFlagWinsOverEnvironment(t *testing.T) {
	envKey, _ := secretbox.NewKey()
	t.Setenv(masterKeyEnv, base64.StdEncoding.EncodeToString(envKey))
	path := filepath.Join(t.TempDir(), "new.key")
	fileKey, _, err := secretbox.LoadOrCreateKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := storeConfig{dataDir: t.TempDir(), masterKeyFile: path}
	keyring, err := cfg.keyring(newTestLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keyring.CurrentKeyID(), secretbox.KeyID(fileKey); got != want {
		t.Fatalf("current master key = %s (the environment's is %s), want %s from --master-key-file",
			got, secretbox.KeyID(envKey), want)
	}
}
