//go:build unix

package cli

import (
	"os"
	"syscall"
)

// ownProcessGroup starts a command in a process group of its own, led by it.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends sig to p's process group: p and every process it started that has not
// left the group.
func signalGroup(p *os.Process, sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid, sig)
}
