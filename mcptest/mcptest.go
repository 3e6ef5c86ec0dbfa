// Package mcptest starts the servers tests talk to, on loopback:
//
//   - the go-sdk's conformance everything-server (Everything, built from the
//     module cache; EverythingStateful with sessions);
//   - fakes that replay recorded Python servers byte for byte (NewFake:
//     FastMCP, the MCP Python SDK), sealing their requestState and refusing
//     it once it ran out (Expire) or the server restarted (Restart), as the
//     real ones do;
//   - the same fakes as a local server's process over stdio (ServeStdio:
//     a test binary runs it as the program Rounds starts);
//   - a server of the tasks extension (NewTasker), whose tasks work, ask
//     and finish on polls rather than on time;
//   - a server that reports progress while a tool runs (NewReporter);
//   - a strict OAuth 2.1 authorization server (NewAuthServer), with Protect
//     to put an MCP server behind it.
package mcptest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Everything starts the conformance everything-server (stateless
// Streamable HTTP) for the test and returns its MCP endpoint URL.
func Everything(tb testing.TB) string {
	tb.Helper()
	return everything(tb)
}

// EverythingStateful starts the everything-server with sessions, as a
// 2025-11-25 server: it asks its questions with elicitation/create and
// sampling/createMessage on the open request.
func EverythingStateful(tb testing.TB) string {
	tb.Helper()
	return everything(tb, "-stateless=false")
}

func everything(tb testing.TB, flags ...string) string {
	tb.Helper()
	buildOnce.Do(func() {
		out, err := exec.Command("go", "tool", "-n", "everything-server").Output()
		if err != nil {
			buildErr = fmt.Errorf("building everything-server: %w", err)
			return
		}
		binary = strings.TrimSpace(string(out))
	})
	if buildErr != nil {
		tb.Fatal(buildErr)
	}
	addr := freeAddr(tb)
	cmd := exec.Command(binary, append([]string{"-http", addr}, flags...)...)
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr + "/"
	waitListening(tb, addr)
	return url
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func waitListening(tb testing.TB, addr string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("everything-server did not start listening on %s", addr)
}
