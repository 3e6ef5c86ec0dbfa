package app

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
)

func TestServersFile(t *testing.T) {
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": "/home/rounds", "ISSUES_KEY": "k-123", "SECRET_OTHER": "never passed"}
	getenv := func(k string) string { return env[k] }
	for _, tc := range []struct {
		name string
		file string
		want []ServerConfig
		err  string // what the error says, with its line
	}{
		{"OK", `{"mcpServers": {
  "notes": {"command": "python3", "args": ["notes_server.py", "--dir=${HOME}/notes"], "env": {"NOTES_DIR": "/srv/notes"}, "cwd": "/srv"},
  "issues": {"url": "https://mcp.example.com/mcp", "headers": {"X-Api-Key": "${ISSUES_KEY}"}, "protocol": "2025-11-25", "sampling": true, "roots": true, "maxTasks": 20, "agentQuestions": "team:ops"},
  "old": {"type": "stdio", "command": "uvx", "args": ["old-server"], "protocol": "2025-11-25", "maxProcesses": 2}
}}`, []ServerConfig{
			{Name: "notes", URL: "stdio:notes", Protocol: "auto", MaxProcesses: 4, Command: &mcpclient.Command{Path: "python3",
				Args: []string{"notes_server.py", "--dir=/home/rounds/notes"}, Dir: "/srv",
				Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/rounds", "NOTES_DIR=/srv/notes"}}},
			{Name: "issues", URL: "https://mcp.example.com/mcp", Protocol: "2025-11-25", Sampling: true, Roots: true,
				HeaderName: "X-Api-Key", HeaderValue: "k-123", MaxTasks: 20, AgentQuestions: "team:ops"},
			{Name: "old", URL: "stdio:old", Protocol: "2025-11-25", MaxProcesses: 2, Command: &mcpclient.Command{Path: "uvx",
				Args: []string{"old-server"}, Env: []string{"PATH=/usr/bin:/bin", "HOME=/home/rounds"}}},
		}, ""},
		{"ErrSyntax", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\",}\n}}", nil, "line 2: invalid character '}'"},
		{"ErrUnknownField", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\"},\n  \"b\": {\"comand\": \"x\"}\n}}", nil, `line 3: server "b": unknown field "comand"`},
		{"ErrType", "{\"mcpServers\": {\n\n  \"a\": {\"command\": \"x\", \"args\": \"-v\"}}}", nil, `line 3: server "a": args should be a list of strings, not a JSON string`},
		{"ErrUnsetVariable", "{\"mcpServers\": {\"a\": {\"url\": \"https://a.test/\", \"headers\": {\"Authorization\": \"Bearer ${NOPE}\"}}}}", nil, `line 1: server "a": ${NOPE} is not set`},
		{"ErrBoth", `{"mcpServers": {"a": {"command": "x", "url": "https://a.test/"}}}`, nil, "not both"},
		{"ErrNeither", `{"mcpServers": {"a": {"args": ["x"]}}}`, nil, `give "command"`},
		{"ErrSSE", `{"mcpServers": {"a": {"type": "sse", "url": "https://a.test/sse"}}}`, nil, "Streamable HTTP"},
		{"ErrTwoHeaders", `{"mcpServers": {"a": {"url": "https://a.test/", "headers": {"A": "1", "B": "2"}}}}`, nil, "one header"},
		{"ErrMaxTasks", `{"mcpServers": {"a": {"url": "https://a.test/", "maxTasks": -1}}}`, nil, "maxTasks should be 1 or more"},
		{"ErrMaxTasksType", "{\"mcpServers\": {\n\"a\": {\"url\": \"https://a.test/\", \"maxTasks\": \"10\"}}}", nil, `line 2: server "a": maxTasks should be a whole number, not a JSON string`},
		{"ErrAgentQuestions", "{\"mcpServers\": {\n\"a\": {\"url\": \"https://a.test/\", \"agentQuestions\": \"\"}}}", nil, `line 2: server "a": agentQuestions should be "agent", "owner", a person's name or "team:NAME"`},
		{"ErrAgentQuestionsType", `{"mcpServers": {"a": {"url": "https://a.test/", "agentQuestions": true}}}`, nil, `server "a": agentQuestions should be a string, not a JSON bool`},
		{"ErrApprovalsRule", "{\"mcpServers\": {\n\"bank\": {\"url\": \"https://a.test/\", \"approvals\": [\n  {\"tools\": [\"transfer\"], \"ask\": \"ada\"},\n  {\"tools\": [\"refund\"], \"when\": \"args.amount >\", \"ask\": \"ada\"}]}}}", nil,
			`line 4: server "bank": approvals: rule 2: "when" is not valid CEL: ERROR: <input>:1:14: Syntax error`},
		{"ErrApprovalsAsk", "{\"mcpServers\": {\n\"bank\": {\"url\": \"https://a.test/\", \"approvals\": [{\"tools\": \"destructive\", \"ask\": []}]}}}", nil,
			`line 2: server "bank": approvals: rule 1: "ask" must name a person, "team:NAME", or a list of them`},
		{"ErrApprovalsNotList", `{"mcpServers": {"bank": {"url": "https://a.test/", "approvals": {"tools": "destructive"}}}}`, nil,
			`server "bank": approvals: want a JSON list of rules`},
		{"ErrProtocol", `{"mcpServers": {"a": {"command": "x", "protocol": "2020-01-01"}}}`, nil, "unknown protocol"},
		{"ErrName", `{"mcpServers": {"a b": {"command": "x"}}}`, nil, "a name is letters"},
		{"ErrTwice", "{\"mcpServers\": {\"a\": {\"command\": \"x\"},\n \"a\": {\"command\": \"y\"}}}", nil, `line 2: server "a" is named twice`},
		{"ErrNoServers", `{"servers": {}}`, nil, `no "mcpServers"`},
		{"ErrTruncated", "{\"mcpServers\": {\n\"a\": {\"command\": \"x\"}", nil, "line 2: the file ends before its JSON does"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "servers.json")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := LoadConfig(func(k string) string {
				if k == "MCP_SERVERS_FILE" {
					return path
				}
				return getenv(k)
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), path) {
					t.Fatalf("err = %v, want the file, and %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.Servers, tc.want) {
				t.Errorf("servers =\n%#v\nwant\n%#v", cfg.Servers, tc.want)
			}
			for _, s := range cfg.Servers {
				if s.Command != nil && strings.Contains(strings.Join(s.Command.Env, " "), "SECRET_OTHER") {
					t.Error("a local server got a variable its entry does not name")
				}
			}
		})
	}
}

func TestServersFileJoinsMCPServers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"demo": {"command": "x"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MCP_SERVERS_FILE": path, "MCP_SERVERS": "demo=http://a.test/mcp"}
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "named in MCP_SERVERS too") {
		t.Fatalf("err = %v, want the name taken twice", err)
	}
	env["MCP_SERVERS"] = "other=http://a.test/mcp"
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil || len(cfg.Servers) != 2 || cfg.Servers[0].Name != "other" || cfg.Servers[1].URL != "stdio:demo" {
		t.Fatalf("servers = %+v, %v", cfg.Servers, err)
	}
	env["MCP_SERVERS_FILE"] = filepath.Join(t.TempDir(), "missing.json")
	if _, err := LoadConfig(func(k string) string { return env[k] }); err == nil || !strings.Contains(err.Error(), "MCP_SERVERS_FILE") {
		t.Fatalf("err = %v, want the missing file named", err)
	}
}
