//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package secretbox

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// locksHeld: holds lock the file (and keep it open).
const locksHeld = true

func (h *KeyFileHold) lockShared() error {
	for {
		err := unix.Flock(int(h.f.Fd()), unix.LOCK_SH)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// lockExclusive turns the hold exclusive, failing with ErrKeyFileInUse when another process
// holds the file too.
func (h *KeyFileHold) lockExclusive() error {
	err := unix.Flock(int(h.f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrKeyFileInUse
	}
	if err != nil {
		return fmt.Errorf("secretbox: locking master key file: %w", err)
	}
	return nil
}
