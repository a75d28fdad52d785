package loadtest

import "syscall"

// replicaProcAttr puts a replica in a process group of its own and has the
// kernel kill it if the bench dies first (kill -9, a crash), when no
// deferred stop runs.
func replicaProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
