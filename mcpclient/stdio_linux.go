package mcpclient

import "syscall"

// childAttr puts a local server's program in a process group of its own,
// and has the kernel kill it when the thread that started it ends (see
// launcher): when Rounds ends, even by SIGKILL.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
