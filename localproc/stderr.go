package localproc

import (
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Defaults of how much of a local server's stderr is logged: a program
// that floods it would otherwise flood the log.
const (
	DefaultStderrLogLines  = 1000
	DefaultStderrLogPeriod = time.Minute
)

// stderrLog logs the stderr lines of one local server's processes, at
// most most lines a period. Lines beyond are counted, not logged, and a
// line at the period's end says how many were dropped.
type stderrLog struct {
	log    *slog.Logger
	server string
	most   int
	period time.Duration
	now    func() time.Time // the engine's clock

	mu           sync.Mutex
	start        time.Time // of the current period
	logged       int
	droppedLines int
	droppedBytes int
	timer        *time.Timer // says what was dropped at the period's end
}

func newStderrLog(log *slog.Logger, server string, most int, period time.Duration, now func() time.Time) *stderrLog {
	return &stderrLog{log: log, server: server, most: most, period: period, now: now, start: now()}
}

// line logs a line, or counts it if the period's lines are logged.
func (s *stderrLog) line(text string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if now.Sub(s.start) >= s.period {
		s.next(now)
	}
	if s.logged < s.most {
		s.logged++
		s.log.Info(s.server+": "+text, "server", s.server, "stream", "stderr")
		return
	}
	if s.droppedLines == 0 {
		s.timer = time.AfterFunc(s.start.Add(s.period).Sub(now), s.periodEnded)
	}
	s.droppedLines++
	s.droppedBytes += len(text)
}

func (s *stderrLog) periodEnded() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); now.Sub(s.start) >= s.period {
		s.next(now)
	}
}

// next says what the period dropped, if anything, and begins another.
func (s *stderrLog) next(now time.Time) {
	s.sayDropped()
	s.start, s.logged = now, 0
}

// stop says what the current period dropped so far, as the instance stops.
func (s *stderrLog) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sayDropped()
}

func (s *stderrLog) sayDropped() {
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
	if s.droppedLines == 0 {
		return
	}
	period := "minute"
	if s.period != time.Minute {
		period = s.period.String()
	}
	s.log.Warn(fmt.Sprintf("dropped %d line%s (%d byte%s) of stderr in the last %s",
		s.droppedLines, plural(s.droppedLines), s.droppedBytes, plural(s.droppedBytes), period),
		"server", s.server, "stream", "stderr", "dropped_lines", s.droppedLines, "dropped_bytes", s.droppedBytes)
	s.droppedLines, s.droppedBytes = 0, 0
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
