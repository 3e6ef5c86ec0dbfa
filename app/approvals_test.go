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

// TestServersFileApprovals: a servers file's approval rules are stored at
// start as the file's, set again at the next start from the file as it is
// then, and kept (editable again) once the file stops giving them; a bad
// rule stops the start naming the file, the server, the rule and the
// reason; web server add --approvals takes a file or JSON, refusing a bad
// rule before it registers anything.
func TestServersFileApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDatabase(t)
	path := filepath.Join(t.TempDir(), "servers.json")
	getenv := func(k string) string {
		switch k {
		case "DATABASE_URL":
			return db
		case "MCP_SERVERS_FILE":
			return path
		}
		return ""
	}
	st, closeDB, err := openStore(ctx, databaseConfig(getenv))
	if err != nil {
		t.Fatal(err)
	}
	defer closeDB()
	start := func(file string) error {
		t.Helper()
		if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(getenv)
		if err != nil {
			return err
		}
		return registerServers(ctx, st, cfg, cfg.Servers, slog.New(slog.DiscardHandler))
	}
	rules := func(name string) (string, bool) {
		t.Helper()
		srv, err := st.ServerByName(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := srv.Policy()
		if err != nil {
			t.Fatal(err)
		}
		return p.Text(), srv.ApprovalsFromFile
	}

	err = start(`{"mcpServers": {"bank": {"url": "https://bank.example/mcp",
		"approvals": [{"tools": ["transfer"], "when": "args.amount > 1000", "ask": "team:finance", "needs": 2},
		              {"tools": "destructive", "ask": "team:ops"}]}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := "[\n" + `  {"tools":["transfer"],"when":"args.amount > 1000","ask":"team:finance","needs":2},` + "\n" +
		`  {"tools":"destructive","ask":"team:ops"}` + "\n]"
	if got, fromFile := rules("bank"); got != want || !fromFile {
		t.Fatalf("bank's rules after start = %q (from file %v), want the file's:\n%s", got, fromFile, want)
	}

	err = start("{\"mcpServers\": {\"bank\": {\"url\": \"https://bank.example/mcp\",\n" +
		"\"approvals\": [{\"tools\": \"destructive\", \"ask\": \"team:ops\"},\n" +
		"{\"tools\": [\"transfer\"], \"when\": \"caller.name > 1000\", \"ask\": \"team:finance\"}]}}}")
	if err == nil || !strings.Contains(err.Error(), "MCP_SERVERS_FILE "+path+", line 3") || !strings.Contains(err.Error(), `server "bank"`) ||
		!strings.Contains(err.Error(), "rule 2") || !strings.Contains(err.Error(), "found no matching overload for '_>_'") {
		t.Fatalf("a start with a bad rule: err = %v, want the file and line, the server, the rule and CEL's reason", err)
	}
	if got, _ := rules("bank"); got != want {
		t.Fatalf("a refused start changed bank's rules to %q", got)
	}

	if err := start(`{"mcpServers": {"bank": {"url": "https://bank.example/mcp", "approvals": [{"tools": ["close_account"], "ask": "ada"}]}}}`); err != nil {
		t.Fatal(err)
	}
	if got, fromFile := rules("bank"); got != "[\n  {\"tools\":[\"close_account\"],\"ask\":\"ada\"}\n]" || !fromFile {
		t.Fatalf("bank's rules after the file changed = %q (from file %v), want the new file's", got, fromFile)
	}
	if err := start(`{"mcpServers": {"bank": {"url": "https://bank.example/mcp"}}}`); err != nil {
		t.Fatal(err)
	}
	if got, fromFile := rules("bank"); got != "[\n  {\"tools\":[\"close_account\"],\"ask\":\"ada\"}\n]" || fromFile {
		t.Fatalf("bank's rules once the file gives none = %q (from file %v), want the last ones kept, editable", got, fromFile)
	}

	run := func(args ...string) error {
		return Command(ctx, args, strings.NewReader(""), &bytes.Buffer{}, getenv)
	}
	err = run("server", "add", "shop", "https://shop.example/mcp", "--approvals", `[{"tools": ["refund"], "ask": "ada", "needs": 0}]`)
	if err == nil || !strings.Contains(err.Error(), `--approvals: rule 1: "needs" must be a whole number of 1 or more`) {
		t.Fatalf("web server add --approvals with needs 0: err = %v, want the rule and the reason", err)
	}
	if _, err := st.ServerByName(ctx, "shop"); err == nil {
		t.Fatal("a refused web server add registered the server")
	}
	file := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(file, []byte(`[{"tools": ["refund"], "ask": ["ada", "team:ops"], "needs": "all"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := run("server", "add", "shop", "https://shop.example/mcp", "--approvals", file); err != nil {
		t.Fatal(err)
	}
	if got, fromFile := rules("shop"); got != "[\n  {\"tools\":[\"refund\"],\"ask\":[\"ada\",\"team:ops\"],\"needs\":\"all\"}\n]" || fromFile {
		t.Fatalf("shop's rules from web server add = %q (from file %v)", got, fromFile)
	}
}
