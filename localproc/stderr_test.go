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
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestStderrLog: a server's stderr is logged up to its lines a period;
// the rest is counted, and said at the period's end without another line
// coming, and again as the instance stops.
func TestStderrLog(t *testing.T) {
	var out syncBuffer
	l := newStderrLog(slog.New(slog.NewTextHandler(&out, nil)), "notes", 2, time.Second)
	for _, line := range []string{"one", "two", "three", "four!", "five"} {
		l.line(line)
	}
	text := out.String()
	if !strings.Contains(text, `msg="notes: one"`) || !strings.Contains(text, `msg="notes: two"`) || strings.Contains(text, "three") {
		t.Fatalf("log:\n%s", text)
	}
	const notice = `msg="dropped 3 lines (14 bytes) of stderr in the last 1s" server=notes stream=stderr dropped_lines=3 dropped_bytes=14`
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), notice) {
		if time.Now().After(deadline) {
			t.Fatalf("no notice of the dropped lines; log:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
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
