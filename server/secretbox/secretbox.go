// Package secretbox seals signing secrets at rest with AES-256-GCM under a master key, so the
// database only ever holds ciphertext. Each sealed value is bound to its endpoint and secret id
// (as additional authenticated data), so ciphertext copied onto another row does not open.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// KeySize is the master key length in bytes (AES-256).
const KeySize = 32

// formatVersion prefixes every sealed value so the format can change later.
const formatVersion byte = 1

// ErrUnknownKey means the sealed value names a master key this keyring does not hold.
var ErrUnknownKey = errors.New("secretbox: sealed under an unknown master key")

// ErrOpen means the sealed value failed authentication (wrong key, wrong row, or corrupted).
var ErrOpen = errors.New("secretbox: sealed value does not open")

// Keyring seals with its current master key and opens with any key it holds.
type Keyring struct {
	currentID string
	aeads     map[string]cipher.AEAD
}

// NewKeyring builds a keyring whose current key is current; older keys (for values sealed
// before a master-key rotation) may follow.
func NewKeyring(current []byte, older ...[]byte) (*Keyring, error) {
	k := &Keyring{aeads: make(map[string]cipher.AEAD)}
	for i, key := range append([][]byte{current}, older...) {
		if len(key) != KeySize {
			return nil, fmt.Errorf("secretbox: master key must be %d bytes, got %d", KeySize, len(key))
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("secretbox: %w", err)
		}
		id := KeyID(key)
		if i == 0 {
			k.currentID = id
		}
		k.aeads[id] = aead
	}
	return k, nil
}

// KeyID names a master key without revealing it: a truncated SHA-256 under a fixed label.
// A 256-bit random key cannot be recovered from its hash.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("hookverify master key id v1\x00"), key...))
	return "mk_" + hex.EncodeToString(sum[:8])
}

// Has reports whether the keyring holds the key named keyID.
func (k *Keyring) Has(keyID string) bool {
	_, ok := k.aeads[keyID]
	return ok
}

// CurrentKeyID is the id of the key new values are sealed under.
func (k *Keyring) CurrentKeyID() string { return k.currentID }

// Seal encrypts plaintext for the given endpoint and secret id.
func (k *Keyring) Seal(endpointID, secretID string, plaintext []byte) (keyID string, sealed []byte, err error) {
	aead := k.aeads[k.currentID]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, fmt.Errorf("secretbox: reading randomness: %w", err)
	}
	out := make([]byte, 0, 1+len(nonce)+len(plaintext)+aead.Overhead())
	out = append(out, formatVersion)
	out = append(out, nonce...)
	out = aead.Seal(out, nonce, plaintext, additionalData(endpointID, secretID))
	return k.currentID, out, nil
}

// Open decrypts a value sealed by Seal for the same endpoint and secret id.
func (k *Keyring) Open(keyID, endpointID, secretID string, sealed []byte) ([]byte, error) {
	aead, ok := k.aeads[keyID]
	if !ok {
		return nil, fmt.Errorf("%w (%s)", ErrUnknownKey, keyID)
	}
	if len(sealed) < 1+aead.NonceSize()+aead.Overhead() || sealed[0] != formatVersion {
		return nil, ErrOpen
	}
	nonce := sealed[1 : 1+aead.NonceSize()]
	plain, err := aead.Open(nil, nonce, sealed[1+aead.NonceSize():], additionalData(endpointID, secretID))
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

func additionalData(endpointID, secretID string) []byte {
	return []byte("hookverify secret v1\x00" + endpointID + "\x00" + secretID)
}

// ParseKey decodes a master key given as standard base64 of 32 bytes (surrounding white space
// is ignored). The error never contains the input.
func ParseKey(encoded string) ([]byte, error) {
	if strings.TrimSpace(encoded) == "" {
		return nil, errors.New("secretbox: master key is empty")
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(encoded))
	if err != nil {
		return nil, errors.New("secretbox: master key is not valid base64")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("secretbox: master key must decode to %d bytes, got %d", KeySize, len(key))
	}
	return key, nil
}

// NewKey returns a fresh random master key.
func NewKey() ([]byte, error) {
	key := make([]byte, KeySize)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("secretbox: reading randomness: %w", err)
	}
	return key, nil
}

// ReadKeyFile reads a base64 master key from a file.
func ReadKeyFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secretbox: reading master key file: %w", err)
	}
	key, err := ParseKey(string(data))
	if err != nil {
		// The file named (never its content): an empty one is most often a start that crashed
		// while creating it where no atomic creation was available.
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return key, nil
}

// LoadOrCreateKeyFile reads the key file at path, or creates it with a new random key and
// mode 0600 when it does not exist. created reports which happened.
func LoadOrCreateKeyFile(path string) (key []byte, created bool, err error) {
	key, err = ReadKeyFile(path)
	if err == nil {
		return key, false, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	if info, lerr := os.Lstat(path); lerr == nil && info.Mode()&os.ModeSymlink != 0 {
		// Not generated through it: the key would land wherever the link points.
		return nil, false, fmt.Errorf("secretbox: master key file %s is a symbolic link to a file that does not exist: restore the file it names, or remove the link", path)
	}
	if key, err = NewKey(); err != nil {
		return nil, false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("secretbox: creating key directory: %w", err)
	}
	// The key is written to a file of its own and only then linked to path, so that path never
	// exists without the whole key in it: created in place, another process starting at the
	// same time read the empty file before the key was in it, and failed; and a crash or a
	// full disk between creating and writing left an empty key file that failed every start
	// after it. The link, like O_EXCL, never replaces a file another process made meanwhile.
	// A crash before the link leaves the temporary file, a key in plain text, behind: see
	// RemoveStaleTempKeyFiles.
	tmp, err := os.CreateTemp(dir, tempKeyPrefix(path)+"*")
	if err != nil {
		return nil, false, fmt.Errorf("secretbox: creating master key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeKeyFile(tmp, key); err != nil {
		return nil, false, err
	}
	switch err := moveNoReplace(tmp.Name(), path); {
	case err == nil:
	case errors.Is(err, os.ErrExist):
		// Another process created the file meanwhile: read theirs instead of overwriting.
		key, err = ReadKeyFile(path)
		return key, false, err
	case errors.Is(err, errNoReplaceUnsupported):
		// Neither a hard link nor a rename that refuses to replace: create the file in place,
		// as O_EXCL allows. A crash while filling it leaves it empty (the next start says so;
		// remove it then).
		if key, created, err = createKeyFileInPlace(path, key); err != nil || !created {
			return key, false, err
		}
	default:
		return nil, false, fmt.Errorf("secretbox: creating master key file: %w", err)
	}
	// The file's name lives in the directory: without this, a crash could lose the file after
	// secrets were sealed under its key, and the next start would generate another key.
	if err := syncDir(dir); err != nil {
		return nil, false, fmt.Errorf("secretbox: syncing master key directory: %w", err)
	}
	return key, true, nil
}

// tempKeyPrefix is the name, in path's directory, that LoadOrCreateKeyFile's temporary files
// start with.
func tempKeyPrefix(path string) string { return "." + filepath.Base(path) + ".new-" }

// StaleTempKeyAge is how old a temporary key file must be for RemoveStaleTempKeyFiles to
// remove it: far beyond the milliseconds between its creation and its link, so that the file
// of another instance starting at the same moment is left to it.
const StaleTempKeyAge = 10 * time.Minute

// RemoveStaleTempKeyFiles removes the temporary files LoadOrCreateKeyFile left beside path
// (.<name>.new-*) when a crash came between writing one and linking it into place: each holds
// a master key in plain text. Only those last modified at least olderThan ago are removed;
// it returns their paths (never their content) and any it could not remove.
func RemoveStaleTempKeyFiles(path string, olderThan time.Duration) (removed []string, err error) {
	dir := filepath.Dir(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("secretbox: listing master key directory: %w", err)
	}
	prefix := tempKeyPrefix(path)
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < olderThan {
			continue // gone meanwhile, or another instance's, starting now
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("secretbox: removing stale temporary master key file: %w", err))
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// writeKeyFile writes key, base64, to f (mode 0600) and makes it durable, closing f.
func writeKeyFile(f *os.File, key []byte) error {
	if err := f.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		f.Close()
		return fmt.Errorf("secretbox: creating master key file: %w", err)
	}
	if _, err := f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return fmt.Errorf("secretbox: writing master key file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("secretbox: syncing master key file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("secretbox: closing master key file: %w", err)
	}
	return nil
}

// createKeyFileInPlace creates path holding key where hard links are not available; a file
// it fails to fill is removed, so that the next start does not find it empty.
func createKeyFileInPlace(path string, key []byte) ([]byte, bool, error) {
	// O_EXCL: if another process created the file meanwhile, read theirs instead of overwriting.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		key, err = ReadKeyFile(path)
		return key, false, err
	}
	if err != nil {
		return nil, false, fmt.Errorf("secretbox: creating master key file: %w", err)
	}
	if err := writeKeyFile(f, key); err != nil {
		os.Remove(path)
		return nil, false, err
	}
	return key, true, nil
}

// moveNoReplace moves src to dst unless dst exists (then an error wrapping os.ErrExist, src
// left): a hard link, then src removed, which like O_EXCL never replaces a file another
// process made meanwhile; or, on a file system without hard links (vfat, many FUSE and network
// mounts), a rename that refuses to replace (renameat2 RENAME_NOREPLACE on Linux, renamex_np
// RENAME_EXCL on macOS). errNoReplaceUnsupported where neither works; an error wrapping
// os.ErrNotExist when src is gone.
func moveNoReplace(src, dst string) error {
	linkErr := linkFile(src, dst)
	switch {
	case linkErr == nil:
		return os.Remove(src)
	case errors.Is(linkErr, os.ErrExist), errors.Is(linkErr, os.ErrNotExist):
		return linkErr
	}
	switch err := renameNoReplace(src, dst); {
	case err == nil, errors.Is(err, os.ErrExist), errors.Is(err, os.ErrNotExist), errors.Is(err, errNoReplaceUnsupported):
		return err
	default:
		return fmt.Errorf("%w (and link: %w)", err, linkErr)
	}
}

// errNoReplaceUnsupported: renameNoReplace cannot work on this system or file system.
var errNoReplaceUnsupported = errors.New("secretbox: no-replace rename not supported")

// linkFile is os.Link (a variable so that a test can take hard links away).
var linkFile = os.Link

// syncDir makes a directory's entries durable (a variable so that a test can see it called).
// Windows cannot sync a directory (and does not need to): there it does nothing.
var syncDir = func(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
