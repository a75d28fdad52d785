//go:build !linux

package loadtest

import "syscall"

// replicaProcAttr puts a replica in a process group of its own. Only Linux
// kills it with a bench that dies without stopping it.
func replicaProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
