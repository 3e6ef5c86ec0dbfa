//go:build !linux

package app

// Protect does nothing outside Linux, where Rounds is built for
// development only: run it on Linux in production.
func Protect() error { return nil }
