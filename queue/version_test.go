package queue

import (
	"os"
	"strings"
	"testing"
)

// TestRiverVersion fails when go.mod requires another River release than
// the one this package is written against: read the statements here, and
// the engine's listener, against the new release, then move RiverVersion.
func TestRiverVersion(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for line := range strings.SplitSeq(string(mod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) < 2 || !strings.HasPrefix(f[0], "github.com/riverqueue/river") {
			continue
		}
		found++
		if f[1] != RiverVersion {
			t.Errorf("go.mod requires %s %s; queue.RiverVersion is %s", f[0], f[1], RiverVersion)
		}
	}
	if found == 0 {
		t.Fatal("go.mod requires no github.com/riverqueue/river module")
	}
}
