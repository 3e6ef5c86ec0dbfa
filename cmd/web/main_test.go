package main

import (
	"net"
	"os"
	"testing"
)

// TestMain doubles as the command when run with ROUNDS_TEST_INSTANCE=1, so
// a test can run it as a process of its own and read what it says.
func TestMain(m *testing.M) {
	if os.Getenv("ROUNDS_TEST_INSTANCE") == "1" {
		os.Args = os.Args[:1] // the command's own path: no subcommand
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
