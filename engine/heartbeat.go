package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strconv"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

// NewInstanceID names a process: its host, its pid and a random part, so
// that a restarted process with a reused pid is a new instance.
func NewInstanceID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "unknown"
	}
	if len(host) > 60 {
		host = host[:60]
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// heartbeat writes the instance's row every interval until stopped.
type heartbeat struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (e *Engine) startHeartbeat(ctx context.Context) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &heartbeat{cancel: cancel, done: make(chan struct{})}
	e.beat = b
	host, _ := os.Hostname()
	hb := store.Heartbeat{
		ID: e.cfg.InstanceID, Version: e.cfg.Version, Hostname: host, PID: os.Getpid(),
		StartedAt: time.Now(), Interval: e.cfg.HeartbeatInterval,
	}
	go func() {
		defer close(b.done)
		tick := time.NewTicker(e.cfg.HeartbeatInterval)
		defer tick.Stop()
		for {
			if e.cfg.Notifier != nil {
				hb.AuthHeard = e.cfg.Notifier.AuthHeard()
			}
			if err := e.store.Beat(ctx, hb); err != nil && ctx.Err() == nil {
				e.log.WarnContext(ctx, "heartbeat", "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
}

// stopHeartbeat stops beating and records a clean stop, so the instance is
// listed as stopped rather than silent.
func (e *Engine) stopHeartbeat(ctx context.Context) error {
	if e.beat == nil {
		return nil
	}
	e.beat.cancel()
	<-e.beat.done
	return e.store.StopInstance(ctx, e.cfg.InstanceID)
}
