package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestServeLeavesNoUncheckedGeneratedKey: a start that generates master.key over a database
// holding secrets sealed under another key, and then fails before the store is checked (its
// port taken, say), left the generated file in the data directory; the next start read it as
// the directory's own key, without generating, so without the refusal, and served every
// delivery those secrets sign UNAVAILABLE. A generated key is the directory's only once a
// start has checked it against the store; until then a failed start moves it aside.
func TestServeLeavesNoUncheckedGeneratedKey(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := st.CreateEndpoint(t.Context(), storage.Endpoint{ID: "gh", Provider: "github", DedupeScope: "gh",
		TimestampTolerance: 5 * time.Minute, MaxBodyBytes: 1 << 20, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddSecret(t.Context(), storage.Secret{ID: "sec_1", EndpointID: "gh", KeyID: "mk_lost", Sealed: []byte("sealed"),
		CreatedAt: now, Fingerprint: "fp"}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var out lockedBuffer
	err = runServe(t.Context(), env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
		"--listen", taken.Addr().String(), "--data-dir", dir,
	})
	if err == nil {
		t.Fatalf("serve on a taken port succeeded; log:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "master.key")); !os.IsNotExist(err) {
		t.Errorf("a start that failed before checking the key it generated left master.key in the data directory (%v)", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var next lockedBuffer
	err = runServe(ctx, env{stdin: strings.NewReader(""), stdout: &next, stderr: &next}, []string{
		"--listen", "127.0.0.1:0", "--data-dir", dir,
	})
	if ctx.Err() != nil || err == nil || !strings.Contains(err.Error(), "mk_lost") {
		t.Fatalf("the next start: serve = %v (still running: %v); want the refusal naming mk_lost; log:\n%s", err, ctx.Err() != nil, next.String())
	}
}
