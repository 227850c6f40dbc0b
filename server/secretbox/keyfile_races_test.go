package secretbox

import (
	"bytes"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tempKeyFiles lists the .<name>.new-* files LoadOrCreateKeyFile may leave beside path.
func tempKeyFiles(t *testing.T, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempKeyPrefix(path)) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestLosingTheKeyFileRaceLeavesNoPlaintextKey: when another process links its key file into
// place first, this start reads theirs, reports it did not create it, and removes its own
// temporary file (a master key in plain text).
func TestLosingTheKeyFileRaceLeavesNoPlaintextKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.key")
	theirs := bytes.Repeat([]byte{9}, KeySize)
	orig := linkFile
	linkFile = func(oldname, newname string) error {
		// Another process wins between our read and our link.
		if err := os.WriteFile(newname, []byte(base64Key(theirs)), 0o600); err != nil {
			return err
		}
		return orig(oldname, newname)
	}
	t.Cleanup(func() { linkFile = orig })
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(key, theirs) {
		t.Fatalf("LoadOrCreateKeyFile: created=%v, theirs=%v, %v", created, bytes.Equal(key, theirs), err)
	}
	if left := tempKeyFiles(t, path); len(left) != 0 {
		t.Fatalf("temporary key files left behind: %q", left)
	}
}

// TestLosingTheInPlaceKeyFileRaceReportsNotCreated: with neither hard links nor a no-replace
// rename, a file another process created meanwhile is read, not reported as created.
func TestLosingTheInPlaceKeyFileRaceReportsNotCreated(t *testing.T) {
	path := filepath.Join(t.TempDir(), "master.key")
	theirs := bytes.Repeat([]byte{5}, KeySize)
	origLink, origRename := linkFile, renameNoReplace
	linkFile = func(oldname, newname string) error {
		if err := os.WriteFile(newname, []byte(base64Key(theirs)), 0o600); err != nil {
			return err
		}
		return &os.LinkError{Op: "link", Old: oldname, New: newname, Err: syscall.EPERM}
	}
	renameNoReplace = func(string, string) error { return errNoReplaceUnsupported }
	t.Cleanup(func() { linkFile, renameNoReplace = origLink, origRename })
	key, created, err := LoadOrCreateKeyFile(path)
	if err != nil || created || !bytes.Equal(key, theirs) {
		t.Fatalf("LoadOrCreateKeyFile: created=%v, theirs=%v, %v", created, bytes.Equal(key, theirs), err)
	}
}

// TestRemoveStaleTempKeyFilesOnlyOldRegularFiles: a temporary key file younger than the age
// given may be another instance's, starting now: it stays; an old one goes; a directory with
// the same prefix is not a key file and stays.
func TestRemoveStaleTempKeyFilesOnlyOldRegularFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	fresh := filepath.Join(dir, tempKeyPrefix(path)+"fresh")
	old := filepath.Join(dir, tempKeyPrefix(path)+"old")
	sub := filepath.Join(dir, tempKeyPrefix(path)+"dir")
	for _, p := range []string{fresh, old} {
		if err := os.WriteFile(p, []byte("k"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-2 * StaleTempKeyAge)
	for _, p := range []string{old, sub} {
		if err := os.Chtimes(p, past, past); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := RemoveStaleTempKeyFiles(path, StaleTempKeyAge)
	if err != nil || len(removed) != 1 || removed[0] != old {
		t.Fatalf("removed %q, %v; want only %q", removed, err, old)
	}
	for _, p := range []string{fresh, sub} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s: %v, want it left", p, err)
		}
	}
}

// TestSetAsideLeavesAFileThatReplacedTheHeldOne: a key file put at the path after this
// process held (and so sealed under) another is not this process's to move aside.
func TestSetAsideLeavesAFileThatReplacedTheHeldOne(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	_, _, gen, err := LoadOrCreateHeldKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	if err := os.Rename(path, path+".elsewhere"); err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte{4}, KeySize)
	if err := os.WriteFile(path, []byte(base64Key(other)), 0o600); err != nil {
		t.Fatal(err)
	}
	if aside, err := gen.SetAside(); err != nil || aside != "" {
		t.Fatalf("SetAside: %q, %v; want nothing moved", aside, err)
	}
	if got, err := ReadKeyFile(path); err != nil || !bytes.Equal(got, other) {
		t.Fatalf("the replacing key file was moved: %v", err)
	}
}

// TestSetAsideWithoutNoReplaceRenameNeverOverwrites: where neither a hard link nor a
// no-replace rename works, moving aside still never replaces an existing aside file.
func TestSetAsideWithoutNoReplaceRenameNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "master.key")
	key, _, gen, err := LoadOrCreateHeldKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer gen.Close()
	withoutHardLinks(t)
	orig := renameNoReplace
	renameNoReplace = func(string, string) error { return errNoReplaceUnsupported }
	t.Cleanup(func() { renameNoReplace = orig })
	now := time.Now().Unix()
	var existing []string
	for _, s := range []int64{now, now + 1, now + 2} {
		p := path + ".unused-" + strconv.FormatInt(s, 10)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		existing = append(existing, p)
	}
	aside, err := gen.SetAside()
	if err != nil || aside == "" {
		t.Fatalf("SetAside: %q, %v", aside, err)
	}
	for _, p := range existing {
		if b, err := os.ReadFile(p); err != nil || string(b) != "x" {
			t.Fatalf("%s was replaced: %q, %v", p, b, err)
		}
	}
	if got, err := ReadKeyFile(aside); err != nil || !bytes.Equal(got, key) {
		t.Fatalf("aside file: %v", err)
	}
}

// TestSetAsideReportsAnUnsyncedMove: a move aside whose directory cannot be synced is
// reported, since a crash could bring the unchecked key back.
func TestSetAsideReportsAnUnsyncedMove(t *testing.T) {
	dir := t.TempDir()
	_, _, gen, err := LoadOrCreateHeldKeyFile(filepath.Join(dir, "master.key"))
	if err != nil {
		t.Fatal(err)
	}
	orig := syncDir
	failure := errors.New("sync failed")
	syncDir = func(string) error { return failure }
	t.Cleanup(func() { syncDir = orig })
	if _, err := gen.SetAside(); !errors.Is(err, failure) {
		t.Fatalf("SetAside: %v, want the sync failure", err)
	}
}

func base64Key(key []byte) string { return base64.StdEncoding.EncodeToString(key) + "\n" }
