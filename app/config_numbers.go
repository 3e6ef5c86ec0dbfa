package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-rounds/rounds/agents"
	"github.com/mcp-rounds/rounds/engine"
)

// durationSetting is a setting that is a Go duration: its variable, the
// field it is read into, the field's default, and what it accepts, said
// with an example when it is wrong.
type durationSetting struct {
	name    string
	to      *time.Duration
	def     time.Duration
	example string
	// orZero accepts 0, for never; days accepts a number of days, "90d".
	orZero, days bool
}

// countSetting is a setting that is a whole number of at least least.
type countSetting struct {
	name  string
	to    *int
	def   int
	least int
}

// durations are every setting that is a duration, in one table; a zero
// default leaves the choice to the engine.
func (c *Config) durations() []durationSetting {
	return []durationSetting{
		{name: "READ_MAX_LAG", to: &c.ReadMaxLag, def: DefaultReadMaxLag, example: "10s"},
		{name: "ROUND_TTL", to: &c.RoundTTL, def: engine.DefaultRoundTTL, example: "30m"},
		{name: "MCP_REQUEST_TIMEOUT", to: &c.RequestTimeout, def: engine.DefaultRequestTimeout, example: "15s"},
		{name: "HELD_TIMEOUT", to: &c.HeldTimeout, def: engine.DefaultHeldTimeout, example: "10m"},
		{name: "AGENT_WAIT", to: &c.AgentWait, def: agents.DefaultWait, example: "10m"},
		{name: "RETRY_WINDOW", to: &c.RetryWindow, def: engine.DefaultRetryWindow, example: "10m", orZero: true},
		{name: "TASK_WAIT_POLL", to: &c.TaskWaitPoll, def: engine.DefaultTaskWaitPoll, example: "30s"},
		{name: "TASK_MAX_LIFETIME", to: &c.TaskMaxLifetime, def: engine.DefaultTaskLifetime, days: true},
		{name: "SESSION_TTL", to: &c.SessionTTL, def: 12 * time.Hour, example: "12h"},
		{name: "RETENTION", to: &c.Retention, def: engine.DefaultRetention, days: true},
		{name: "AUDIT_RETENTION", to: &c.AuditRetention, def: engine.DefaultAuditRetention, days: true},
		{name: "EXPIRY_INTERVAL", to: &c.ExpiryInterval, example: "30s"},
		{name: "HEARTBEAT_INTERVAL", to: &c.HeartbeatInterval, example: "30s"},
		{name: "RETENTION_INTERVAL", to: &c.RetentionInterval, example: "30s"},
	}
}

// counts are every setting that is a whole number, in one table.
func (c *Config) counts() []countSetting {
	return []countSetting{
		{name: "MAX_ROUNDS", to: &c.MaxRounds, def: engine.DefaultMaxRounds, least: 1},
		{name: "STATE_RESTARTS", to: &c.StateRestarts, def: engine.DefaultMaxRestarts, least: 0},
		{name: "TASK_WORKERS", to: &c.TaskWorkers, def: engine.DefaultTaskWorkers, least: 1},
	}
}

// readNumbers reads every duration and count through its table.
func (c *Config) readNumbers(getenv func(string) string) error {
	for _, s := range c.durations() {
		if err := s.read(getenv(s.name)); err != nil {
			return err
		}
	}
	for _, s := range c.counts() {
		if err := s.read(getenv(s.name)); err != nil {
			return err
		}
	}
	if c.AuditRetention < 24*time.Hour {
		return fmt.Errorf("AUDIT_RETENTION: the audit log is kept at least a day (1d), got %q", getenv("AUDIT_RETENTION"))
	}
	return nil
}

// read sets the field from v, or to its default when v is empty.
func (s durationSetting) read(v string) error {
	*s.to = s.def
	if v == "" {
		return nil
	}
	var err error
	switch {
	case s.days:
		if *s.to, err = parseDays(v); err != nil || *s.to <= 0 {
			return fmt.Errorf("%s: want a number of days such as 90d, or a Go duration such as 2160h, got %q", s.name, v)
		}
	case s.orZero:
		if *s.to, err = time.ParseDuration(v); err != nil || *s.to < 0 {
			return fmt.Errorf("%s: want a Go duration such as %s (0 for never), got %q", s.name, s.example, v)
		}
	default:
		if *s.to, err = time.ParseDuration(v); err != nil || *s.to <= 0 {
			return fmt.Errorf("%s: want a positive Go duration such as %s, got %q", s.name, s.example, v)
		}
	}
	return nil
}

// read sets the field from v, or to its default when v is empty.
func (s countSetting) read(v string) error {
	*s.to = s.def
	if v == "" {
		return nil
	}
	var err error
	if *s.to, err = strconv.Atoi(v); err != nil || *s.to < s.least {
		if s.least == 0 {
			return fmt.Errorf("%s: want a whole number, 0 or more, got %q", s.name, v)
		}
		return fmt.Errorf("%s: want a whole number of at least %d, got %q", s.name, s.least, v)
	}
	return nil
}

// parseDays reads a number of days ("90d") or a Go duration ("2160h").
func parseDays(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil {
			return 0, err
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	return time.ParseDuration(v)
}
