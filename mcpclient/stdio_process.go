package mcpclient

// A local server's program started and stopped: its command, never
// through a shell; its process group, ended whole; the launcher that
// starts it; and its stderr read line by line.

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Command is how a local server is started: a program and its arguments,
// never through a shell, with exactly the environment Env (KEY=VALUE) in
// the directory Dir.
type Command struct {
	Path string
	Args []string
	Env  []string
	Dir  string
}

// stopGrace is how long a program is given at each step of its stop:
// after its stdin is closed, and after SIGTERM.
const stopGrace = 3 * time.Second

// child is one running program of a local server. It runs in a process
// group of its own, whose id is its pid, so that what it starts itself
// (npx's node, a shell's background jobs) is stopped with it; on Linux the
// kernel kills it when Rounds ends, however Rounds ends (see launcher).
type child struct {
	cmd   *exec.Cmd
	pid   int
	stdin *os.File

	exited chan struct{} // closed once the program itself has ended
	ended  chan struct{} // closed once its process group is gone too
	err    error         // how it ended (exec's Wait), once exited is closed

	once     sync.Once
	closeErr error
}

// startChild starts a local server's program on l's launcher, each line
// of its stderr handed to stderr, and returns it with the connection
// over its stdin and stdout.
func (l *Locals) startChild(c Command, stderr func(string)) (*child, mcp.Connection, error) {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Env = append([]string{}, c.Env...) // never nil: nil would pass on all of ours
	cmd.Dir = c.Dir
	cmd.SysProcAttr = childAttr()
	// Pipes of our own, not exec's: Wait closes exec's, and it runs as
	// soon as the program exits (to end its group), which could lose what
	// the program wrote last; these are read to the end.
	var ends [6]*os.File // stdin's, stdout's and stderr's read and write ends
	for i := 0; i < len(ends); i += 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeFiles(ends[:i]...)
			return nil, nil, err
		}
		ends[i], ends[i+1] = r, w
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = ends[0], ends[3], ends[5]
	err := l.launch(cmd)
	closeFiles(ends[0], ends[3], ends[5]) // the program holds them now
	if err != nil {
		closeFiles(ends[1], ends[2], ends[4])
		return nil, nil, err
	}
	ch := &child{cmd: cmd, pid: cmd.Process.Pid, stdin: ends[1], exited: make(chan struct{}), ended: make(chan struct{})}
	stdout := &childOutput{f: ends[2], done: make(chan struct{})}
	errs := &childOutput{f: ends[4], done: make(chan struct{})}
	go func() {
		lw := &lineWriter{line: stderr}
		_, _ = io.Copy(lw, errs)
		lw.flush()
	}()
	go ch.wait(stdout, errs)
	conn, _ := (&mcp.IOTransport{Reader: stdout, Writer: ch}).Connect(context.Background())
	return ch, conn, nil
}

func closeFiles(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// wait reaps the program when it ends, then ends what is left of its
// process group, then stops reading its output once nothing more comes.
func (ch *child) wait(outputs ...*childOutput) {
	ch.err = ch.cmd.Wait()
	close(ch.exited)
	endGroup(ch.pid)
	close(ch.ended)
	for _, o := range outputs {
		o.closeAfter(stopGrace)
	}
}

// endGroup stops what is left of a process group whose leader has ended:
// SIGTERM, then SIGKILL to whatever is still there after stopGrace.
func endGroup(pgid int) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // nothing left
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(stopGrace)
	for {
		select {
		case <-tick.C:
			if syscall.Kill(-pgid, 0) != nil {
				return
			}
		case <-deadline:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
	}
}

func (ch *child) Write(b []byte) (int, error) { return ch.stdin.Write(b) }

// Close stops the program as the spec's stdio shutdown says, and the rest
// of its process group with it: its stdin is closed; if it has not ended
// after stopGrace, the group gets SIGTERM, and after another, SIGKILL.
// It returns how the program ended.
func (ch *child) Close() error {
	ch.once.Do(func() {
		_ = ch.stdin.Close()
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			select {
			case <-ch.exited:
			case <-time.After(stopGrace):
				_ = syscall.Kill(-ch.pid, sig)
			}
		}
		select {
		case <-ch.exited:
		case <-time.After(stopGrace):
			ch.closeErr = errors.New("the program did not end after SIGKILL")
			return
		}
		<-ch.ended
		ch.closeErr = ch.err
	})
	return ch.closeErr
}

// childOutput is the read end of a program's stdout or stderr. Closing
// it does nothing: it is closed once the program's group is gone and
// everything it wrote was read, or after stopGrace if a process that left
// the group still holds it.
type childOutput struct {
	f    *os.File
	done chan struct{}
	once sync.Once
}

func (o *childOutput) Read(b []byte) (int, error) {
	n, err := o.f.Read(b)
	if err != nil {
		o.once.Do(func() { close(o.done) })
	}
	return n, err
}

func (o *childOutput) Close() error { return nil }

func (o *childOutput) closeAfter(d time.Duration) {
	select {
	case <-o.done:
	case <-time.After(d):
	}
	_ = o.f.Close()
}

// launcher starts the programs of local servers, all on one OS thread of
// its own. Linux sends a program its Pdeathsig when the thread that
// started it ends, not when the process does; Go ends a thread when a
// goroutine locked to it returns, so a program started on any thread
// could be killed while Rounds runs on. This goroutine never returns, so
// its thread ends with Rounds, and the programs with it.
type launcher struct {
	once sync.Once
	reqs chan launchReq
}

type launchReq struct {
	cmd *exec.Cmd
	err chan error
}

func (l *Locals) launch(cmd *exec.Cmd) error {
	la := &l.launcher
	la.once.Do(func() {
		la.reqs = make(chan launchReq)
		go func() {
			runtime.LockOSThread() // for ever: see launcher
			for r := range la.reqs {
				r.err <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	la.reqs <- launchReq{cmd: cmd, err: errc}
	return <-errc
}

// exitStatus says how a process ended: from what reading its stdout
// failed with, and what waiting for it returned. A program that writes
// anything but JSON-RPC messages to stdout breaks the stdio transport, and
// is stopped for it.
func exitStatus(read, wait error) string {
	status := "exit status 0"
	if wait != nil {
		status = wait.Error()
	}
	ended := errors.Is(read, io.EOF) || errors.Is(read, io.ErrUnexpectedEOF) || errors.Is(read, os.ErrClosed) || errors.Is(read, io.ErrClosedPipe)
	if read != nil && !ended {
		status = "it wrote to stdout what is not a JSON-RPC message (" + read.Error() + "), and was stopped: " + status
	}
	return status
}

// stderrText is a line of a program's stderr as text that may be logged
// and stored: valid UTF-8, without NULs (which Postgres text refuses).
func stderrText(b []byte) string {
	return strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", ""), "\uFFFD")
}

// lineWriter hands on what a process writes, line by line.
type lineWriter struct {
	line func(string)
	mu   sync.Mutex
	buf  []byte
}

// maxStderrLine bounds a line of a process's stderr that is handed on.
const maxStderrLine = 4096

func (lw *lineWriter) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.buf = append(lw.buf, b...)
	for {
		i := bytes.IndexByte(lw.buf, '\n')
		if i < 0 {
			if len(lw.buf) > maxStderrLine {
				lw.line(stderrText(lw.buf[:maxStderrLine]))
				lw.buf = lw.buf[:0]
			}
			return len(b), nil
		}
		line := bytes.TrimRight(lw.buf[:i], "\r")
		if len(line) > maxStderrLine {
			line = line[:maxStderrLine]
		}
		lw.line(stderrText(line))
		lw.buf = lw.buf[i+1:]
	}
}

// flush hands on a last line the program ended without a newline.
func (lw *lineWriter) flush() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if line := bytes.TrimRight(lw.buf, "\r"); len(line) > 0 {
		lw.line(stderrText(line))
	}
	lw.buf = nil
}
