package app

import (
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/engine"
)

// TestLoadConfigNumbers: every setting that is a duration or a count
// takes its default when unset, is read when set, and is refused in
// words when wrong.
func TestLoadConfigNumbers(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	cfg, err := LoadConfig(env())
	if err != nil {
		t.Fatal(err)
	}
	defaults := map[string][2]any{
		"READ_MAX_LAG": {cfg.ReadMaxLag, DefaultReadMaxLag}, "ROUND_TTL": {cfg.RoundTTL, engine.DefaultRoundTTL},
		"MCP_REQUEST_TIMEOUT": {cfg.RequestTimeout, engine.DefaultRequestTimeout}, "MAX_ROUNDS": {cfg.MaxRounds, engine.DefaultMaxRounds},
		"STATE_RESTARTS": {cfg.StateRestarts, engine.DefaultMaxRestarts}, "HELD_TIMEOUT": {cfg.HeldTimeout, engine.DefaultHeldTimeout},
		"RETRY_WINDOW": {cfg.RetryWindow, engine.DefaultRetryWindow}, "TASK_WAIT_POLL": {cfg.TaskWaitPoll, engine.DefaultTaskWaitPoll},
		"SESSION_TTL": {cfg.SessionTTL, 12 * time.Hour}, "RETENTION": {cfg.Retention, engine.DefaultRetention},
		"AUDIT_RETENTION": {cfg.AuditRetention, engine.DefaultAuditRetention},
		"EXPIRY_INTERVAL": {cfg.ExpiryInterval, time.Duration(0)}, "HEARTBEAT_INTERVAL": {cfg.HeartbeatInterval, time.Duration(0)},
		"RETENTION_INTERVAL": {cfg.RetentionInterval, time.Duration(0)},
	}
	for name, d := range defaults {
		if d[0] != d[1] {
			t.Errorf("%s unset: %v, want %v", name, d[0], d[1])
		}
	}

	for _, tc := range []struct {
		name, value string
		field       func(Config) any
		want        any
	}{
		{"READ_MAX_LAG", "3s", func(c Config) any { return c.ReadMaxLag }, 3 * time.Second},
		{"ROUND_TTL", "30m", func(c Config) any { return c.RoundTTL }, 30 * time.Minute},
		{"MCP_REQUEST_TIMEOUT", "15s", func(c Config) any { return c.RequestTimeout }, 15 * time.Second},
		{"MAX_ROUNDS", "1", func(c Config) any { return c.MaxRounds }, 1},
		{"STATE_RESTARTS", "0", func(c Config) any { return c.StateRestarts }, 0},
		{"HELD_TIMEOUT", "10m", func(c Config) any { return c.HeldTimeout }, 10 * time.Minute},
		{"RETRY_WINDOW", "0", func(c Config) any { return c.RetryWindow }, time.Duration(0)},
		{"TASK_WAIT_POLL", "5s", func(c Config) any { return c.TaskWaitPoll }, 5 * time.Second},
		{"SESSION_TTL", "1h", func(c Config) any { return c.SessionTTL }, time.Hour},
		{"RETENTION", "90d", func(c Config) any { return c.Retention }, 90 * 24 * time.Hour},
		{"AUDIT_RETENTION", "48h", func(c Config) any { return c.AuditRetention }, 48 * time.Hour},
		{"EXPIRY_INTERVAL", "1s", func(c Config) any { return c.ExpiryInterval }, time.Second},
		{"HEARTBEAT_INTERVAL", "2s", func(c Config) any { return c.HeartbeatInterval }, 2 * time.Second},
		{"RETENTION_INTERVAL", "1m", func(c Config) any { return c.RetentionInterval }, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(env(tc.name, tc.value))
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.field(cfg); got != tc.want {
				t.Errorf("%s=%s: %v, want %v", tc.name, tc.value, got, tc.want)
			}
		})
	}

	for _, tc := range []struct{ name, value, want string }{
		{"READ_MAX_LAG", "0s", `READ_MAX_LAG: want a positive Go duration such as 10s, got "0s"`},
		{"ROUND_TTL", "bogus", `ROUND_TTL: want a positive Go duration such as 30m, got "bogus"`},
		{"MCP_REQUEST_TIMEOUT", "-1s", `MCP_REQUEST_TIMEOUT: want a positive Go duration such as 15s, got "-1s"`},
		{"MAX_ROUNDS", "0", `MAX_ROUNDS: want a whole number of at least 1, got "0"`},
		{"STATE_RESTARTS", "-1", `STATE_RESTARTS: want a whole number, 0 or more, got "-1"`},
		{"HELD_TIMEOUT", "10", `HELD_TIMEOUT: want a positive Go duration such as 10m, got "10"`},
		{"RETRY_WINDOW", "-1m", `RETRY_WINDOW: want a Go duration such as 10m (0 for never), got "-1m"`},
		{"TASK_WAIT_POLL", "0", `TASK_WAIT_POLL: want a positive Go duration such as 30s, got "0"`},
		{"SESSION_TTL", "x", `SESSION_TTL: want a positive Go duration such as 12h, got "x"`},
		{"RETENTION", "0d", `RETENTION: want a number of days such as 90d, or a Go duration such as 2160h, got "0d"`},
		{"AUDIT_RETENTION", "xd", `AUDIT_RETENTION: want a number of days such as 90d, or a Go duration such as 2160h, got "xd"`},
		{"AUDIT_RETENTION", "1h", `AUDIT_RETENTION: the audit log is kept at least a day (1d), got "1h"`},
		{"EXPIRY_INTERVAL", "0s", `EXPIRY_INTERVAL: want a positive Go duration such as 30s, got "0s"`},
		{"HEARTBEAT_INTERVAL", "soon", `HEARTBEAT_INTERVAL: want a positive Go duration such as 30s, got "soon"`},
		{"RETENTION_INTERVAL", "-5m", `RETENTION_INTERVAL: want a positive Go duration such as 30s, got "-5m"`},
	} {
		t.Run("Err"+tc.name, func(t *testing.T) {
			if _, err := LoadConfig(env(tc.name, tc.value)); err == nil || err.Error() != tc.want {
				t.Errorf("%s=%s: %v, want %s", tc.name, tc.value, err, tc.want)
			}
		})
	}
}
