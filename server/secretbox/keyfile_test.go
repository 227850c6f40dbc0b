package secretbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// withoutHardLinks makes linkFile fail as on a file system without hard links (vfat, some
// FUSE and network mounts) for the rest of the test.
func withoutHardLinks(t *testing.T) {
	orig := linkFile
	linkFile = func(oldname, newname string) error {
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: syscall.EPERM}
	}
	t.Cleanup(func() { linkFile = orig })
}

// TestLoadOrCreateKeyFileWithoutHardLinksConcurrently: where link(2) is refused, the key file
// was created in place and filled afterwards, so a process starting at the same moment read
// it empty and failed (and a crash while filling it left it empty, failing every later
// start). The no-replace rename puts the whole file in place at once, as the link does.
func TestLoadOrCreateKeyFileWithoutHardLinksConcurrently(t *testing.T) {
	// Not parallel: it replaces linkFile.
	withoutHardLinks(t)
	for round := range 200 {
		path := filepath.Join(t.TempDir(), "master.key")
		const n = 8
		keys := make([][]byte, n)
		created := make([]bool, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				keys[i], created[i], errs[i] = LoadOrCreateKeyFile(path)
			})
		}
		close(start)
		wg.Wait()
		creators := 0
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: caller %d: %v", round, i, errs[i])
			}
			if !bytes.Equal(keys[i], keys[0]) {
				t.Fatalf("round %d: callers got different keys", round)
			}
			if created[i] {
				creators++
			}
		}
		if creators != 1 {
			t.Fatalf("round %d: %d callers report creating the key, want 1", round, creators)
		}
	}
}

// TestLoadOrCreateKeyFileWithoutHardLinksSyncsAndKeepsMode: the rename fallback leaves the
// file 0600 and its name durable (the directory synced), and leaves no temporary file.
func TestLoadOrCreateKeyFileWithoutHardLinksSyncsAndKeepsMode(t *testing.T) {
	withoutHardLinks(t)
	var synced []string
	orig := syncDir
	syncDir = func(dir string) error {
		synced = append(synced, dir)
		return orig(dir)
	}
	t.Cleanup(func() { syncDir = orig })
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	if _, created, err := LoadOrCreateKeyFile(path); err != nil || !created {
		t.Fatalf("LoadOrCreateKeyFile: created=%v, %v", created, err)
	}
	info, err := os.Lstat(path)
	if err != nil || info.Mode() != 0o600 {
		t.Fatalf("key file: %v, %v; want a regular file of mode 0600", info.Mode(), err)
	}
	if len(synced) == 0 || synced[len(synced)-1] != dir {
		t.Fatalf("directories synced: %q, want %q last", synced, dir)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only master.key", len(entries))
	}
}

// TestLoadOrCreateKeyFileInPlaceLastResort: with neither hard links nor a no-replace rename,
// the file is still created (in place, O_EXCL) with the whole key.
func TestLoadOrCreateKeyFileInPlaceLastResort(t *testing.T) {
	withoutHardLinks(t)
	orig := renameNoReplace
	renameNoReplace = func(string, string) error { return errNoReplaceUnsupported }
	t.Cleanup(func() { renameNoReplace = orig })
	path := filepath.Join(t.TempDir(), "master.key")
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || !created {
		t.Fatalf("LoadOrCreateKeyFile: created=%v, %v", created, err)
	}
	again, err := ReadKeyFile(path)
	if err != nil || !bytes.Equal(again, key) {
		t.Fatalf("reread: %v, same=%v", err, bytes.Equal(again, key))
	}
}

// TestSetAsideLeavesAHeldKeyFile: a start that generated the key file and fails moves it
// aside only when no other process holds it; then never over another file.
func TestSetAsideLeavesAHeldKeyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	key, created, gen, err := LoadOrCreateHeldKeyFile(path)
	if err != nil || !created {
		t.Fatalf("generate: created=%v, %v", created, err)
	}
	defer gen.Close()
	other, otherCreated, reader, err := LoadOrCreateHeldKeyFile(path)
	if err != nil || otherCreated || !bytes.Equal(other, key) {
		t.Fatalf("read: created=%v, %v", otherCreated, err)
	}
	if _, err := gen.SetAside(); !errors.Is(err, ErrKeyFileInUse) {
		t.Fatalf("SetAside while another holds the file: %v, want ErrKeyFileInUse", err)
	}
	if got, err := ReadKeyFile(path); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("the held key file was moved: %v", err)
	}
	reader.Close()
	// An aside file of the same second exists already: it must not be replaced.
	if err := os.WriteFile(path+".unused-"+strconv.FormatInt(time.Now().Unix(), 10), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	aside, err := gen.SetAside()
	if err != nil || aside == "" {
		t.Fatalf("SetAside with no other holder: %q, %v", aside, err)
	}
	if got, err := ReadKeyFile(aside); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("the aside file does not hold the key: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the key file is still in place: %v", err)
	}
}

// TestHeldKeyFileRace: readers holding the key file while its generator tries to move it
// aside always end with the key that is at the path (or one they generated), never one moved
// from under them.
func TestHeldKeyFileRace(t *testing.T) {
	for round := range 100 {
		path := filepath.Join(t.TempDir(), "master.key")
		_, _, gen, err := LoadOrCreateHeldKeyFile(path)
		if err != nil {
			t.Fatal(err)
		}
		const n = 4
		keys := make([][]byte, n)
		holds := make([]*KeyFileHold, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { keys[i], _, holds[i], errs[i] = LoadOrCreateHeldKeyFile(path) })
		}
		wg.Go(func() { gen.SetAside() })
		wg.Wait()
		gen.Close()
		onDisk, err := ReadKeyFile(path)
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("round %d: reader %d: %v", round, i, errs[i])
			}
			if err != nil || !bytes.Equal(keys[i], onDisk) {
				t.Fatalf("round %d: reader %d holds a key not at the path (%v)", round, i, err)
			}
			holds[i].Close()
		}
	}
}

// TestLoadOrCreateKeyFileClearErrors: a dangling symbolic link where the key file should be
// and an empty key file (a crash while creating it in place) are each named as such, and no
// error holds key material.
func TestLoadOrCreateKeyFileClearErrors(t *testing.T) {
	dir := t.TempDir()
	dangling := filepath.Join(dir, "dangling.key")
	if err := os.Symlink(filepath.Join(dir, "missing"), dangling); err != nil {
		t.Skip(err)
	}
	_, _, err := LoadOrCreateKeyFile(dangling)
	if err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("dangling symlink: %v, want an error naming the symbolic link", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "missing")); !os.IsNotExist(err) {
		t.Errorf("a key was generated through a dangling symbolic link")
	}
	empty := filepath.Join(dir, "empty.key")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadOrCreateKeyFile(empty); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("empty key file: %v, want an error saying it is empty", err)
	}
	// An operator's echo: the key and a newline is fine; a passphrase is refused without it.
	key := bytes.Repeat([]byte{0xab}, KeySize)
	echoed := filepath.Join(dir, "echoed.key")
	os.WriteFile(echoed, []byte(base64.StdEncoding.EncodeToString(key)+"\r\n"), 0o600)
	if got, err := ReadKeyFile(echoed); err != nil || !bytes.Equal(got, key) {
		t.Errorf("a key with a trailing CRLF: %v", err)
	}
	pass := filepath.Join(dir, "pass.key")
	os.WriteFile(pass, []byte("correct horse battery staple\n"), 0o600)
	if _, err := ReadKeyFile(pass); err == nil || strings.Contains(err.Error(), "horse") {
		t.Errorf("a passphrase as key: %v", err)
	}
	short := filepath.Join(dir, "short.key")
	os.WriteFile(short, []byte(base64.StdEncoding.EncodeToString(key[:16])+"\n"), 0o600)
	if _, err := ReadKeyFile(short); err == nil || !strings.Contains(err.Error(), "got 16") {
		t.Errorf("a 16-byte key: %v", err)
	}
}

// TestSetAsideSyncsItsDirectory: moving an unchecked generated key aside must be durable, or a
// crash after it could bring master.key back, to be read unchecked at the next start.
func TestSetAsideSyncsItsDirectory(t *testing.T) {
	dir := t.TempDir()
	_, _, gen, err := LoadOrCreateHeldKeyFile(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	var synced []string
	orig := syncDir
	syncDir = func(d string) error {
		synced = append(synced, d)
		return orig(d)
	}
	t.Cleanup(func() { syncDir = orig })
	if aside, err := gen.SetAside(); err != nil || aside == "" {
		t.Fatalf("SetAside: %q, %v", aside, err)
	}
	if !slices.Contains(synced, dir) {
		t.Fatalf("directories synced: %q, want %q", synced, dir)
	}
}
