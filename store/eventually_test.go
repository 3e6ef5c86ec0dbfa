package store_test

import (
	"testing"
	"time"
)

// eventually checks cond every few milliseconds until it returns nil, and
// fails the test with cond's last error after limit: how these tests wait
// for something to happen, rather than sleep for a guessed while.
func eventually(t *testing.T, limit time.Duration, cond func() error) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(limit)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", limit, err)
		}
		<-tick.C
	}
}
