//go:build unix

package cli

import (
	"os"
	"syscall"
)

// signalGroup sends sig to p's process group: p and every process it started that has not
// left the group.
func signalGroup(p *os.Process, sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid, sig)
}
