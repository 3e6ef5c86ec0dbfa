package mcpclient

import (
	"slices"
	"strings"
	"testing"
)

// TestLineWriter: a program's stderr is handed on line by line, however it
// is written, as text Postgres stores: no NULs, valid UTF-8, bounded.
func TestLineWriter(t *testing.T) {
	var got []string
	lw := &lineWriter{line: func(l string) { got = append(got, l) }}
	for _, chunk := range []string{"first li", "ne\r\nsecond\n", "with \x00NUL and \xff\n", strings.Repeat("x", maxStderrLine+10)} {
		_, _ = lw.Write([]byte(chunk))
	}
	want := []string{"first line", "second", "with NUL and \uFFFD", strings.Repeat("x", maxStderrLine)}
	if !slices.Equal(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
}
