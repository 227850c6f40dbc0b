package cli

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookverify/hookverify/internal/syncbuf"
	"github.com/hookverify/hookverify/storage"
	"github.com/hookverify/hookverify/storage/sqlite"
)

// TestServeRefusesAGeneratedKeyOverSealedSecrets: serve on a data directory whose database
// holds secrets but whose master.key is gone (deleted, or a restore without it), given no key,
// used to generate a new key and serve: every delivery those secrets sign was answered
// UNAVAILABLE, and every later start read the generated key without a word. It must refuse to
// start, saying which keys the secrets need, and move the generated key aside so that the
// next start asks again; a directory whose database holds no secret still gets its key.
func TestServeRefusesAGeneratedKeyOverSealedSecrets(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	serve := func(t *testing.T, dir string) (error, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var out syncbuf.Buffer
		err := runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{
			"--listen", "127.0.0.1:0", "--data-dir", dir,
		})
		if ctx.Err() != nil {
			t.Fatalf("serve still running after 10 s (err %v); log:\n%s", err, out.String())
		}
		return err, out.String()
	}

	dir := dataDirWithLostKey(t)

	for attempt := 1; attempt <= 2; attempt++ {
		err, logs := serve(t, dir)
		if err == nil || !strings.Contains(err.Error(), "mk_lost") || !strings.Contains(err.Error(), "--master-key-file") {
			t.Fatalf("start %d: serve = %v; want a refusal naming mk_lost and --master-key-file; log:\n%s", attempt, err, logs)
		}
		if _, err := os.Stat(filepath.Join(dir, "master.key")); !os.IsNotExist(err) {
			t.Fatalf("start %d: master.key left in the data directory (%v): the next start would use it without a word", attempt, err)
		}
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, "master.key.unused-*")); len(aside) == 0 {
		t.Error("the generated key was not moved aside")
	}

	// Without sealed secrets the generated key is the data directory's key, as before.
	fresh := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out syncbuf.Buffer
	go func() {
		done <- runServe(ctx, env{stdin: strings.NewReader(""), stdout: &out, stderr: &out}, []string{"--listen", "127.0.0.1:0", "--data-dir", fresh})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "storage ready") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve on a fresh data directory: %v; log:\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(fresh, "master.key")); err != nil {
		t.Fatalf("a fresh data directory has no master.key after serve: %v", err)
	}
}

// dataDirWithLostKey returns a data directory whose database holds a secret in force sealed
// under mk_lost, and no master.key.
func dataDirWithLostKey(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(t.Context(), filepath.Join(dir, "hookverify.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if err := st.CreateEndpoint(t.Context(), storage.Endpoint{ID: "gh", Provider: "github", DedupeScope: "gh",
		TimestampTolerance: 5 * time.Minute, MaxBodyBytes: 1 << 20, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddSecret(t.Context(), storage.Secret{ID: "sec_1", EndpointID: "gh", KeyID: "mk_lost", Sealed: []byte("sealed"),
		CreatedAt: now, Fingerprint: "fp"}, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestServeLeavesNoUncheckedGeneratedKey: a start that generates master.key over a database
// holding secrets sealed under another key, and then fails before the store is checked (its
// port taken, say), left the generated file in the data directory; the next start read it as
// the directory's own key, without generating, so without the refusal, and served every
// delivery those secrets sign UNAVAILABLE. A generated key is the directory's only once a
// start has checked it against the store; until then a failed start moves it aside.
func TestServeLeavesNoUncheckedGeneratedKey(t *testing.T) {
	t.Setenv(masterKeyEnv, "")
	dir := dataDirWithLostKey(t)

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var out syncbuf.Buffer
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
	var next syncbuf.Buffer
	err = runServe(ctx, env{stdin: strings.NewReader(""), stdout: &next, stderr: &next}, []string{
		"--listen", "127.0.0.1:0", "--data-dir", dir,
	})
	if ctx.Err() != nil || err == nil || !strings.Contains(err.Error(), "mk_lost") {
		t.Fatalf("the next start: serve = %v (still running: %v); want the refusal naming mk_lost; log:\n%s", err, ctx.Err() != nil, next.String())
	}
}
