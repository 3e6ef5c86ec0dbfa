package localproc

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a log's output, read while it is written.
type syncBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{} // has a value after a write not yet waited on
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	select {
	case b.written() <- struct{}{}:
	default:
	}
	return n, err
}

// written is the channel a write signals on; b.mu is held.
func (b *syncBuffer) written() chan struct{} {
	if b.wrote == nil {
		b.wrote = make(chan struct{}, 1)
	}
	return b.wrote
}

// waitFor waits until the log says text, looking again after each write,
// for at most limit; it reports whether the log said it.
func (b *syncBuffer) waitFor(text string, limit time.Duration) bool {
	b.mu.Lock()
	wrote := b.written()
	b.mu.Unlock()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for !strings.Contains(b.String(), text) {
		select {
		case <-wrote:
		case <-deadline.C:
			return false
		}
	}
	return true
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStderrLog: a server's stderr is logged up to its lines a period;
// the rest is counted, and said at the period's end without another line
// coming, and again as the instance stops. The clock is set, not waited
// for; the test runs what the period's timer runs.
func TestStderrLog(t *testing.T) {
	var out syncBuffer
	var mu sync.Mutex
	now := time.Date(2031, 5, 4, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	l := newStderrLog(slog.New(slog.NewTextHandler(&out, nil)), "notes", 2, time.Second, clock)
	for _, line := range []string{"one", "two", "three", "four!", "five"} {
		l.line(line)
	}
	text := out.String()
	if !strings.Contains(text, `msg="notes: one"`) || !strings.Contains(text, `msg="notes: two"`) || strings.Contains(text, "three") {
		t.Fatalf("log:\n%s", text)
	}
	l.mu.Lock()
	armed := l.timer != nil
	l.mu.Unlock()
	if !armed {
		t.Fatal("nothing will say what was dropped at the period's end")
	}
	const notice = `msg="dropped 3 lines (14 bytes) of stderr in the last 1s" server=notes stream=stderr dropped_lines=3 dropped_bytes=14`
	l.periodEnded() // the timer, early: the period has not ended
	if strings.Contains(out.String(), "dropped") {
		t.Fatalf("the drop was said before the period's end; log:\n%s", out.String())
	}
	mu.Lock()
	now = now.Add(time.Second)
	mu.Unlock()
	l.periodEnded()
	if !strings.Contains(out.String(), notice) {
		t.Fatalf("no notice of the dropped lines; log:\n%s", out.String())
	}
	l.line("six") // a new period
	l.line("seven")
	l.line("eight")
	l.stop()
	if text := out.String(); !strings.Contains(text, `msg="notes: seven"`) ||
		!strings.Contains(text, `msg="dropped 1 line (5 bytes) of stderr in the last 1s"`) {
		t.Errorf("log:\n%s", text)
	}
}
