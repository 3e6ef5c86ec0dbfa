package app

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

func TestParseServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []ServerConfig
		err  bool
	}{
		{"OK", "demo=http://127.0.0.1:8090/mcp, other=https://mcp.test/x",
			[]ServerConfig{{Name: "demo", URL: "http://127.0.0.1:8090/mcp", Protocol: "auto"},
				{Name: "other", URL: "https://mcp.test/x", Protocol: "auto"}}, false},
		{"OKPinned", "old[2025-11-25]=http://a.test/mcp,new=http://b.test/mcp",
			[]ServerConfig{{Name: "old", URL: "http://a.test/mcp", Protocol: "2025-11-25"},
				{Name: "new", URL: "http://b.test/mcp", Protocol: "auto"}}, false},
		{"OKSamplingAndRoots", "all[sampling,roots]=http://a.test/mcp",
			[]ServerConfig{{Name: "all", URL: "http://a.test/mcp", Protocol: "auto", Sampling: true, Roots: true}}, false},
		{"OKOneFlag", "s[sampling]=http://a.test/,r[roots]=http://b.test/",
			[]ServerConfig{{Name: "s", URL: "http://a.test/", Protocol: "auto", Sampling: true},
				{Name: "r", URL: "http://b.test/", Protocol: "auto", Roots: true}}, false},
		{"OKFlagsCombine", "old[sampling, 2025-11-25]=http://a.test/mcp",
			[]ServerConfig{{Name: "old", URL: "http://a.test/mcp", Protocol: "2025-11-25", Sampling: true}}, false},
		{"ErrUnknownFlag", "x[teleport]=http://a.test/", nil, true},
		{"ErrScheme", "x=ftp://a.test/", nil, true},
		{"ErrName", "bad name=http://a.test/", nil, true},
		{"ErrNoURL", "justaname", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseServers(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error: %t", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseRoots(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string][]store.Root
		err  bool
	}{
		{"OK", "demo=file:///srv/data|Data;file:///home/me, other=file:///tmp",
			map[string][]store.Root{
				"demo":  {{URI: "file:///srv/data", Name: "Data"}, {URI: "file:///home/me"}},
				"other": {{URI: "file:///tmp"}},
			}, false},
		{"OKEmpty", "", map[string][]store.Root{}, false},
		{"OKNoRoots", "demo=", map[string][]store.Root{"demo": {}}, false},
		{"ErrNotFile", "demo=https://example.com/", nil, true},
		{"ErrRelative", "demo=file:data", nil, true},
		{"ErrClimbs", "demo=file:///srv/../etc", nil, true},
		{"ErrClimbsEncoded", "demo=file:///srv/%2e%2e/etc", nil, true},
		{"ErrRemoteHost", "demo=file://elsewhere/srv", nil, true},
		{"ErrTwice", "demo=file:///a,demo=file:///b", nil, true},
		{"ErrNoName", "file:///a", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRoots(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error: %t", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseStderrLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		lines  int
		period time.Duration
		err    bool
	}{
		{"OK", "1000/1m", 1000, time.Minute, false},
		{"OKDefault", "", 1000, time.Minute, false},
		{"OKShort", "20/1s", 20, time.Second, false},
		{"ErrNoPeriod", "1000", 0, 0, true},
		{"ErrZero", "0/1m", 0, 0, true},
		{"ErrPeriod", "10/minute", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines, period, err := parseStderrLog(tc.in)
			if (err != nil) != tc.err || lines != tc.lines || period != tc.period {
				t.Errorf("%q: %d, %s, %v", tc.in, lines, period, err)
			}
		})
	}
}

// TestTaskSettings: TASK_WORKERS and TASK_MAX_LIFETIME, their defaults, and
// what is said of a wrong value.
func TestTaskSettings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		workers  int
		lifetime time.Duration
		err      string
	}{
		{"OKDefaults", nil, 10, 7 * 24 * time.Hour, ""},
		{"OK", map[string]string{"TASK_WORKERS": "3", "TASK_MAX_LIFETIME": "2d"}, 3, 48 * time.Hour, ""},
		{"OKDuration", map[string]string{"TASK_MAX_LIFETIME": "90m"}, 10, 90 * time.Minute, ""},
		{"ErrWorkers", map[string]string{"TASK_WORKERS": "0"}, 0, 0, "TASK_WORKERS: want a whole number of at least 1"},
		{"ErrLifetime", map[string]string{"TASK_MAX_LIFETIME": "forever"}, 0, 0, "TASK_MAX_LIFETIME: want a number of days"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.TaskWorkers != tc.workers || cfg.TaskMaxLifetime != tc.lifetime {
				t.Fatalf("workers %d, lifetime %v, err %v", cfg.TaskWorkers, cfg.TaskMaxLifetime, err)
			}
		})
	}
}

// TestMailDecisions: MAIL_DECISIONS is signin unless set to link, and any
// other value stops the start, saying what it wants.
func TestMailDecisions(t *testing.T) {
	for _, tc := range []struct{ name, in, want, err string }{
		{"OKDefault", "", "signin", ""},
		{"OKSignIn", "signin", "signin", ""},
		{"OKLink", "link", "link", ""},
		{"ErrOther", "yes", "", `MAIL_DECISIONS: want signin (the person mailed signs in to decide) or link (the link alone decides), got "yes"`},
		{"ErrCase", "Link", "", `MAIL_DECISIONS: want signin`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig(func(k string) string {
				if k == "MAIL_DECISIONS" {
					return tc.in
				}
				return ""
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || cfg.MailDecisions != tc.want {
				t.Fatalf("MailDecisions = %q, err %v; want %q", cfg.MailDecisions, err, tc.want)
			}
		})
	}
}
