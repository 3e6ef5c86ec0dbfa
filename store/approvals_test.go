package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// approvalStore is a store with people ann (the caller, also of team
// finance), fay, gus, hal and ida of team finance, and erin, and a server.
func approvalStore(t *testing.T) (*store.Store, int64) {
	t.Helper()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, "finance"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ann", "fay", "gus", "hal", "ida", "erin"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
		if name != "erin" {
			if err := st.AddTeamMember(ctx, "finance", name); err != nil {
				t.Fatal(err)
			}
		}
	}
	srv, err := st.UpsertServer(ctx, "bank", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	return st, srv.ID
}

func askedCall(t *testing.T, st *store.Store, server int64, a store.NewApproval) *store.Call {
	t.Helper()
	if a.Expires.IsZero() {
		a.Expires = time.Now().Add(time.Hour)
	}
	call, err := st.CreateCall(context.Background(), store.NewCall{ServerID: server, Owner: "ann", Method: "tools/call",
		Target: "transfer", Arguments: json.RawMessage(`{"amount": 5000}`), Approval: &a})
	if err != nil {
		t.Fatal(err)
	}
	return call
}

func decide(st *store.Store, call, by, decision, args string) (*store.Decided, error) {
	d := store.ApprovalDecision{Call: call, By: by, Decision: decision, Audit: store.AuditEntry{Instance: "test"}}
	if args != "" {
		d.Arguments = json.RawMessage(args)
	}
	return st.Decide(context.Background(), d)
}

// TestDecideApproval: who is asked is fixed at the start (the team's
// members without the caller, who is in it); the caller and people not
// asked are refused; a delegate decides for the person away; an approval
// of other arguments starts the count again; the last approval needed
// queues the call with the approved arguments; and a decision after the
// end is a conflict.
func TestDecideApproval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, server := approvalStore(t)
	call := askedCall(t, st, server, store.NewApproval{Ask: []string{"team:finance"}, Needs: 2})
	if call.Status != store.CallApprovalRequired {
		t.Fatalf("the new call: %s", call.Status)
	}
	a, err := st.Approval(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Asked, []string{"fay", "gus", "hal", "ida"}) || a.Needs != 2 || a.State != store.ApprovalWaiting {
		t.Fatalf("the approval asked: %+v", a)
	}
	if _, err := decide(st, call.ID, "ann", store.DecisionApprove, ""); !errors.Is(err, store.ErrForbidden) || err.Error() != store.OwnCallMessage {
		t.Errorf("the caller approving: %v", err)
	}
	if _, err := decide(st, call.ID, "erin", store.DecisionApprove, ""); !errors.Is(err, store.ErrForbidden) || err.Error() != store.NotAskedMessage {
		t.Errorf("someone not asked approving: %v", err)
	}
	if err := st.SetAway(ctx, "fay", store.Away{Until: time.Now().Add(time.Hour), Delegate: "erin"},
		store.AuditEntry{Actor: "fay", Action: "user.away", Target: "fay"}); err != nil {
		t.Fatal(err)
	}
	if _, err := decide(st, call.ID, "erin", store.DecisionApprove, ""); err != nil {
		t.Fatalf("fay's delegate approving: %v", err)
	}
	if _, err := decide(st, call.ID, "erin", store.DecisionApprove, ""); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("the same approval twice: %v", err)
	}
	out, err := decide(st, call.ID, "gus", store.DecisionApprove, `{"amount": 2000}`)
	if err != nil {
		t.Fatal(err)
	}
	if out.Approval.State != store.ApprovalWaiting || !slices.Equal(out.Approval.Approved(), []string{"gus"}) {
		t.Errorf("after other arguments: %s, approved %v; want waiting, gus alone counting", out.Approval.State, out.Approval.Approved())
	}
	if out, err = decide(st, call.ID, "hal", store.DecisionApprove, ""); err != nil {
		t.Fatal(err)
	}
	d := out.Approval.Decisions
	if out.Approval.State != store.ApprovalApproved || len(d) != 3 || d[0].By != "erin" || d[0].For != "fay" {
		t.Errorf("the approval after hal: %+v", out.Approval)
	}
	got, err := st.Call(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.CallQueued || string(got.Arguments) != `{"amount": 2000}` {
		t.Errorf("the approved call: %s %s; want queued with the approved arguments", got.Status, got.Arguments)
	}
	if _, err := decide(st, call.ID, "ida", store.DecisionDecline, ""); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a decline after the end: %v", err)
	}
}

// TestApprovalEndsDeclined: an approval ends declined, its call failed
// with a sentence, when someone declines, when nobody left can reach its
// needs (at once, when it is asked), and at its deadline.
func TestApprovalEndsDeclined(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, server := approvalStore(t)
	failed := func(id, want string) {
		t.Helper()
		c, err := st.Call(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if c.Status != store.CallFailed || c.Error == nil || *c.Error != want {
			t.Errorf("call %s: %s %v; want failed saying %q", id, c.Status, c.Error, want)
		}
	}
	declined := askedCall(t, st, server, store.NewApproval{Ask: []string{"fay", "gus"}, All: true})
	if _, err := decide(st, declined.ID, "gus", store.DecisionDecline, ""); err != nil {
		t.Fatal(err)
	}
	failed(declined.ID, "Declined by gus.")

	// Of ann and fay, the caller never decides: one approval is the most.
	unreachable := askedCall(t, st, server, store.NewApproval{Ask: []string{"ann", "fay"}, Needs: 2})
	failed(unreachable.ID, store.QuorumOutOfReach(2))

	late := askedCall(t, st, server, store.NewApproval{Ask: []string{"fay"}, Expires: time.Now().Add(-time.Second)})
	ended, err := st.ExpireDueApprovals(ctx)
	if err != nil || !slices.Contains(ended, late.ID) {
		t.Fatalf("expired approvals: %v %v", ended, err)
	}
	failed(late.ID, store.ApprovalExpiredMessage)
	if again, err := st.ExpireDueApprovals(ctx); err != nil || len(again) != 0 {
		t.Errorf("expiring again: %v %v", again, err)
	}
}
