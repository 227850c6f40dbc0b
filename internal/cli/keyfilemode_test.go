package cli

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/hookverify/hookverify/server/secretbox"
)

// TestServeWarnsOfAMasterKeyFileOthersCanRead: whoever can read the master key file can open
// every stored secret. serve read a key file of mode 0644 without a word; it must say so, for
// the key given with --master-key-file, each --old-master-key-file and the data dir's
// master.key, and stay silent for 0600 and 0400.
func TestServeWarnsOfAMasterKeyFileOthersCanRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix file modes")
	}
	t.Setenv(masterKeyEnv, "")
	t.Setenv(oldMasterKeysEnv, "")
	dir := t.TempDir()
	keyFile := func(name string, mode os.FileMode) string {
		key, _ := secretbox.NewKey()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, mode); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}
	dataDir := filepath.Join(dir, "data")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cfg  storeConfig
		warn bool
	}{
		{"--master-key-file 0644", storeConfig{masterKeyFile: keyFile("open.key", 0o644)}, true},
		{"--master-key-file 0600", storeConfig{masterKeyFile: keyFile("closed.key", 0o600)}, false},
		{"--master-key-file 0400", storeConfig{masterKeyFile: keyFile("readonly.key", 0o400)}, false},
		{"--master-key-file 0620", storeConfig{masterKeyFile: keyFile("groupwrite.key", 0o620)}, true},
		{"--old-master-key-file 0644", storeConfig{masterKeyFile: keyFile("new.key", 0o600), oldMasterKeyFiles: []string{keyFile("old.key", 0o644)}}, true},
		{"data dir master.key 0644", storeConfig{dataDir: dataDir}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.cfg.dataDir != "" {
				keyFile("data/master.key", 0o644)
			}
			var logs bytes.Buffer
			if _, err := c.cfg.keyring(slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
				t.Fatal(err)
			}
			if warned := strings.Contains(logs.String(), "can be read or written by others"); warned != c.warn {
				t.Errorf("warned %v, want %v; log:\n%s", warned, c.warn, logs.String())
			}
		})
	}
}
