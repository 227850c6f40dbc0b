//go:build !unix

package cli

import (
	"os"
	"syscall"
)

// ownProcessGroup: without Unix process groups the command runs as it is.
func ownProcessGroup() *syscall.SysProcAttr { return nil }

// signalGroup can only stop p itself here, and only by killing it.
func signalGroup(p *os.Process, _ syscall.Signal) {
	_ = p.Kill()
}
