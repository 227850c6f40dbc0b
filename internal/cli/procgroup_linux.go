//go:build linux

package cli

import "syscall"

// ownProcessGroup starts a command in a process group of its own, led by it, and has the
// kernel kill it if the worker dies first: a worker killed outright (SIGKILL, the OOM killer)
// cannot stop its command, whose lease then runs out while it still runs, and another worker
// may be running the same delivery by then. The processes the command started are not
// covered: the kernel signals the direct child only.
func ownProcessGroup() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
