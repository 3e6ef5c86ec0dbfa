//go:build !linux

package mcpclient

import "syscall"

// childAttr puts a local server's program in a process group of its own.
// Only Linux kills it when Rounds ends by itself; elsewhere a program
// outlives a Rounds that is killed.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
