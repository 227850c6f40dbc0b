//go:build unix && !linux

package cli

import "syscall"

// ownProcessGroup starts a command in a process group of its own, led by it.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
