package app

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// Protect makes this process non-dumpable, so that no other process of
// its user, the local servers it runs included, can read its environment
// (/proc/<pid>/environ), its memory (/proc/<pid>/mem) or attach to it:
// the kernel then checks those as if the process were root's. A process
// running as root, or with CAP_SYS_PTRACE, still can. It is called before
// any secret is read, and again as an instance starts.
func Protect() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("making the process non-dumpable: %w", err)
	}
	return nil
}
