package secretbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ErrKeyFileInUse means another process holds the key file (see HoldKeyFile), so it was not
// moved aside.
var ErrKeyFileInUse = errors.New("secretbox: the master key file is in use by another process")

// errKeyFileReplaced: the path no longer names the file opened (moved aside meanwhile).
var errKeyFileReplaced = errors.New("secretbox: master key file replaced while opening it")

// KeyFileHold is a process's shared hold on a generated key file, kept for as long as the
// process may seal under the key: a start that generated the file and then fails moves it
// aside only when no other process holds it (SetAside), so that it never takes the key from
// under an instance that read it meanwhile and seals new secrets under it. Where advisory
// file locks are not available (Windows, an NFS mount without lock daemon), holds do not see
// each other, and SetAside moves the file whoever read it.
type KeyFileHold struct {
	f    *os.File
	path string
	// unlocked: no lock could be taken; SetAside goes by path.
	unlocked bool
}

// LoadOrCreateHeldKeyFile is LoadOrCreateKeyFile, returning the file held. The key returned
// is the one in the held file: a file moved aside between reading it and holding it is
// not held; the start reads (or generates) again.
func LoadOrCreateHeldKeyFile(path string) (key []byte, created bool, hold *KeyFileHold, err error) {
	for range 10 {
		key, created, err = LoadOrCreateKeyFile(path)
		if err != nil {
			return nil, false, nil, err
		}
		var held []byte
		hold, held, err = holdKeyFile(path)
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, errKeyFileReplaced) {
			continue // moved aside by the process that generated it: read or generate again
		}
		if err != nil {
			return nil, false, nil, err
		}
		if !bytes.Equal(held, key) {
			created = false // replaced by another process's since: use theirs
		}
		return held, created, hold, nil
	}
	return nil, false, nil, fmt.Errorf("secretbox: master key file %s keeps being replaced: %w", path, errKeyFileReplaced)
}

// Close releases the hold.
func (h *KeyFileHold) Close() error {
	if h == nil || h.f == nil {
		return nil
	}
	err := h.f.Close()
	h.f = nil
	return err
}

// SetAside moves the held file to <path>.unused-<unix time> (with a -N suffix should that
// exist: never over another file) and releases the hold; it returns the new path. When
// another process holds the file it is left where it is and the error wraps ErrKeyFileInUse.
// A file already gone returns "".
func (h *KeyFileHold) SetAside() (string, error) {
	if h.f == nil && !h.unlocked {
		return "", nil // released: the file is no longer this process's to move
	}
	if h.f != nil {
		switch err := h.lockExclusive(); {
		case errors.Is(err, ErrKeyFileInUse):
			return "", err
		case err != nil:
			h.unlocked = true // the file system refuses the lock: by path, as without locks
		}
		defer h.Close()
		if same, err := h.stillAtPath(); err != nil || !same {
			if errors.Is(err, os.ErrNotExist) || (err == nil && !same) {
				return "", nil
			}
			return "", err
		}
	}
	aside, err := moveAsideNoReplace(h.path)
	if err != nil || aside == "" {
		return aside, err
	}
	// Durable, or a crash could bring the file back to be read, unchecked, at the next start.
	if err := syncDir(filepath.Dir(h.path)); err != nil {
		return aside, fmt.Errorf("secretbox: syncing master key directory: %w", err)
	}
	return aside, nil
}

// moveAsideNoReplace renames path to <path>.unused-<unix time>[-N], never over a file.
func moveAsideNoReplace(path string) (string, error) {
	base := fmt.Sprintf("%s.unused-%d", path, time.Now().Unix())
	for i := 1; i <= 100; i++ {
		aside := base
		if i > 1 {
			aside = fmt.Sprintf("%s-%d", base, i)
		}
		switch err := moveNoReplace(path, aside); {
		case err == nil:
			return aside, nil
		case errors.Is(err, os.ErrExist):
			continue
		case errors.Is(err, os.ErrNotExist):
			return "", nil
		case errors.Is(err, errNoReplaceUnsupported):
			if _, err := os.Lstat(aside); err == nil {
				continue
			}
			if err := os.Rename(path, aside); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return "", nil
				}
				return "", err
			}
			return aside, nil
		default:
			return "", err
		}
	}
	return "", fmt.Errorf("secretbox: no free name to move %s aside to", path)
}

// stillAtPath reports whether path still names the held file.
func (h *KeyFileHold) stillAtPath() (bool, error) {
	held, err := h.f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(h.path)
	if err != nil {
		return false, err
	}
	return os.SameFile(held, now), nil
}

// readHeld reads the key from the held file.
func (h *KeyFileHold) readHeld() ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(h.f, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("secretbox: reading master key file: %w", err)
	}
	return ParseKey(string(data))
}

// holdKeyFile opens path, takes a shared lock on it and checks that path still names it.
func holdKeyFile(path string) (*KeyFileHold, []byte, error) {
	// Read-write where it may: on NFS, Linux emulates flock with byte-range locks, and an
	// exclusive one needs a file open for writing.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if f, err = os.Open(path); err != nil {
			return nil, nil, err
		}
	}
	h := &KeyFileHold{f: f, path: path, unlocked: !locksHeld}
	if !h.unlocked && h.lockShared() != nil {
		h.unlocked = true // a file system without locks (NFS without lockd): serve anyway
	}
	if same, err := h.stillAtPath(); err != nil || !same {
		h.Close()
		if err == nil {
			err = errKeyFileReplaced
		}
		return nil, nil, err
	}
	key, err := h.readHeld()
	if err != nil || h.unlocked {
		// Without locks, an open file would only stand in the way of moving it aside
		// (Windows).
		h.Close()
	}
	if err != nil {
		return nil, nil, err
	}
	return h, key, nil
}
