package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/store"
)

// TestServerApprovals: rules set on the admin page are kept with an audit
// entry; rules from the servers file are marked as the file's and refused
// on the admin page; when the file stops giving them they are kept and
// become editable.
func TestServerApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newAdminStore(t)
	for _, name := range []string{"bank", "shop"} {
		if _, err := st.UpsertServer(ctx, name, "http://127.0.0.1:1/mcp"); err != nil {
			t.Fatal(err)
		}
	}
	rules := approvals.MustParse(`[{"tools": ["transfer"], "when": "args.amount > 1000", "ask": "team:finance", "needs": 2}]`)
	entry := store.AuditEntry{Actor: "admin", Action: "server.approvals", Target: "shop"}
	if err := st.SetServerApprovals(ctx, "shop", rules, entry); err != nil {
		t.Fatal(err)
	}
	srv, err := st.ServerByName(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	p, err := srv.Policy()
	if err != nil || p.Text() != rules.Text() || srv.ApprovalsFromFile {
		t.Fatalf("shop's rules = %q (from file %v, %v), want %q", p.Text(), srv.ApprovalsFromFile, err, rules.Text())
	}
	if cached, err := st.ServerPolicy(srv); err != nil || cached.Text() != rules.Text() {
		t.Fatalf("ServerPolicy = %q, %v; want shop's rules", cached.Text(), err)
	}
	if again, _ := st.ServerPolicy(srv); again == nil || again != mustPolicy(t, st, srv) {
		t.Fatal("ServerPolicy compiled the same rules twice")
	}
	log, err := st.AuditLog(ctx, store.AuditFilter{Action: "server.approvals", Target: "shop"})
	if err != nil || len(log) != 1 {
		t.Fatalf("audit log = %v, %v; want one server.approvals entry", log, err)
	}

	if _, err := st.SetFileApprovals(ctx, map[string]*approvals.Policy{"bank": rules}); err != nil {
		t.Fatal(err)
	}
	err = st.SetServerApprovals(ctx, "bank", approvals.MustParse(``), entry)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "servers file") {
		t.Fatalf("clearing the file's rules on the admin page: %v, want a conflict naming the servers file", err)
	}
	bank, err := st.ServerByName(ctx, "bank")
	if err != nil || !bank.ApprovalsFromFile || string(bank.Approvals) == "" {
		t.Fatalf("bank = %s, from file %v, %v; want the file's rules", bank.Approvals, bank.ApprovalsFromFile, err)
	}

	released, err := st.SetFileApprovals(ctx, map[string]*approvals.Policy{})
	if err != nil || len(released) != 1 || released[0] != "bank" {
		t.Fatalf("SetFileApprovals with none = %v, %v; want bank released", released, err)
	}
	bank, _ = st.ServerByName(ctx, "bank")
	if p, _ := bank.Policy(); bank.ApprovalsFromFile || p.Text() != rules.Text() {
		t.Fatalf("released bank: from file %v, rules %q; want its rules kept, editable", bank.ApprovalsFromFile, p.Text())
	}
	if err := st.SetServerApprovals(ctx, "bank", approvals.MustParse(`null`), entry); err != nil {
		t.Fatal(err)
	}
	bank, _ = st.ServerByName(ctx, "bank")
	if bank.Approvals != nil {
		t.Fatalf("cleared rules read back as %s, want null", bank.Approvals)
	}
	missing, err := st.Unanswerable(ctx, approvals.MustParse(`[{"tools": ["a"], "ask": ["ada", "team:finance"]}, {"tools": ["b"], "ask": "ada"}]`))
	if err != nil || strings.Join(missing, ",") != "ada,team:finance" {
		t.Fatalf("Unanswerable = %v, %v; want ada and team:finance, once each", missing, err)
	}
	if _, err := st.CreateUser(ctx, "ada", "", false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, "finance"); err != nil {
		t.Fatal(err)
	}
	if missing, err := st.Unanswerable(ctx, rules); err != nil || len(missing) != 0 {
		t.Fatalf("Unanswerable once they exist = %v, %v; want none", missing, err)
	}
	if _, err := st.SetFileApprovals(ctx, map[string]*approvals.Policy{"gone": rules}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rules for an unregistered server: %v, want not found", err)
	}
}

func mustPolicy(t *testing.T, st *store.Store, srv *store.Server) *approvals.Policy {
	t.Helper()
	p, err := st.ServerPolicy(srv)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
