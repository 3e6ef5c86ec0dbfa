package app

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestAgentQuestionsCommands: the command line refuses an account named
// "agent" or "owner", with the reason; web server add takes who answers
// agents' questions, refusing someone who does not exist before it
// registers anything; and a servers file naming someone who does not
// exist stops the start, naming the file, the server and the reason.
func TestAgentQuestionsCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDatabase(t)
	getenv := func(k string) string {
		if k == "DATABASE_URL" {
			return db
		}
		return ""
	}
	run := func(stdin string, args ...string) error {
		return Command(ctx, args, strings.NewReader(stdin), &bytes.Buffer{}, getenv)
	}
	for _, name := range []string{"agent", "owner"} {
		if err := run("long enough password\n", "user", "add", name); err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("web user add %s: err = %v, want it refused as reserved", name, err)
		}
	}
	if err := run("long enough password\n", "user", "add", "ada"); err != nil {
		t.Fatal(err)
	}
	if err := run("", "server", "add", "issues", "https://mcp.example/mcp", "--agent-questions", "nobody"); err == nil ||
		!strings.Contains(err.Error(), `"nobody"`) {
		t.Errorf("web server add --agent-questions nobody: err = %v, want the name refused", err)
	}
	if err := run("", "server", "add", "issues", "https://mcp.example/mcp", "--agent-questions", "ada"); err != nil {
		t.Fatal(err)
	}
	st, closeDB, err := openStore(ctx, databaseConfig(getenv))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	srv, err := st.ServerByName(ctx, "issues")
	if err != nil || srv.AgentQuestions != "ada" {
		t.Fatalf("the server's agentQuestions = %q, %v; want ada", srv.AgentQuestions, err)
	}

	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers": {"issues": {"url": "https://mcp.example/mcp", "agentQuestions": "team:nobody"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(func(k string) string {
		if k == "MCP_SERVERS_FILE" {
			return path
		}
		return getenv(k)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = registerServers(ctx, st, cfg, cfg.Servers, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `server "issues"`) ||
		!strings.Contains(err.Error(), `no team named "nobody"`) {
		t.Errorf("a servers file naming a team that does not exist: err = %v, want the file, the server and the reason", err)
	}
	if srv, _ := st.ServerByName(ctx, "issues"); srv == nil || srv.AgentQuestions != "ada" {
		t.Errorf("the refused setting was stored: %+v", srv)
	}
}
