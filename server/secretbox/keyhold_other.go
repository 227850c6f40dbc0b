//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package secretbox

// Without advisory locks holds do not see each other: a failed start moves its generated key
// aside whoever read it.
// locksHeld: holds lock the file (and keep it open).
const locksHeld = false

func (h *KeyFileHold) lockShared() error    { return nil }
func (h *KeyFileHold) lockExclusive() error { return nil }
