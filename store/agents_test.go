package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestRoundAsks: whom a round of an agent's call asks, by the server's
// setting, what the agent declared, and the kinds the round asks.
func TestRoundAsks(t *testing.T) {
	t.Parallel()
	all := &store.Agent{Name: "claude-code", Can: store.AgentCan{Form: true, URL: true, Sampling: true, Roots: true}}
	formOnly := &store.Agent{Name: "cursor", Can: store.AgentCan{Form: true}}
	nothing := &store.Agent{Name: "worker"}
	cases := []struct {
		name     string
		setting  string
		agent    *store.Agent
		assignee string
		kinds    []string
		want     string
	}{
		{"no agent: the assignee", "agent", nil, "ada", []string{"form"}, ""},
		{"the agent declared forms", "agent", formOnly, "ada", []string{"form"}, "agent"},
		{"the agent declared every kind", "agent", all, "ada", []string{"form", "sampling", "roots"}, "agent"},
		{"sampling not declared: the owner", "agent", formOnly, "ada", []string{"form", "sampling"}, ""},
		{"an agent that declared nothing", "agent", nothing, "ada", []string{"form"}, ""},
		{"owner setting: the owner, though the agent could", "owner", all, "ada", []string{"form"}, ""},
		{"a team answers forms", "team:ops", all, "team:ops", []string{"form"}, ""},
		{"URL mode to the agent that declared it, whatever the setting", "team:ops", all, "team:ops", []string{"url"}, "agent"},
		{"URL mode not declared, a team assigned: the owner", "team:ops", formOnly, "team:ops", []string{"url"}, "owner"},
		{"URL mode beside a form, a person assigned: the owner", "bob", all, "bob", []string{"form", "url"}, "owner"},
		{"URL mode not declared, the owner assigned: as any round", "agent", formOnly, "ada", []string{"url"}, ""},
		{"URL mode with every kind declared: the agent", "agent", all, "ada", []string{"url", "form"}, "agent"},
		{"no questions", "agent", all, "ada", nil, ""},
	}
	for _, c := range cases {
		got := store.RoundAsks(c.setting, c.agent, "ada", c.assignee, c.kinds)
		if (got == nil && c.want != "") || (got != nil && *got != c.want) {
			t.Errorf("%s: RoundAsks = %v, want %q", c.name, deref(got), c.want)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

// TestAgentCallAssignee: an agent's call with no assignee goes to whom
// the server's agentQuestions says: the owner for "agent" and "owner", the
// person or team named otherwise; a call given an assignee keeps it, and
// a call no agent started goes to its owner as before. A setting naming
// nobody is refused.
func TestAgentCallAssignee(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "bob"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateTeam(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if srv.AgentQuestions != store.AgentQuestionsAgent {
		t.Errorf("a new server's agentQuestions = %q, want agent", srv.AgentQuestions)
	}
	agent := &store.Agent{Name: "claude-code", Version: "2.1", Protocol: "2026-07-28", Can: store.AgentCan{Form: true}}
	for _, c := range []struct {
		setting, assignee string
		agent             *store.Agent
		want              string
	}{
		{"agent", "", agent, "ada"},
		{"owner", "", agent, "ada"},
		{"bob", "", agent, "bob"},
		{"team:ops", "", agent, "team:ops"},
		{"team:ops", "bob", agent, "bob"},
		{"team:ops", "", nil, "ada"},
	} {
		if err := st.SetServerAgentQuestions(ctx, "demo", c.setting); err != nil {
			t.Fatal(err)
		}
		call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "t",
			Assignee: c.assignee, Agent: c.agent})
		if err != nil {
			t.Fatal(err)
		}
		if call.Assignee == nil || *call.Assignee != c.want {
			t.Errorf("setting %q, assignee %q, agent %v: the call's assignee = %v, want %q", c.setting, c.assignee, c.agent != nil,
				deref(call.Assignee), c.want)
		}
		if call.ServerAgentQuestions != c.setting {
			t.Errorf("the call reads its server's agentQuestions as %q, want %q", call.ServerAgentQuestions, c.setting)
		}
		if (call.Agent != nil) != (c.agent != nil) || (call.Agent != nil && call.Agent.Label() != "claude-code 2.1") {
			t.Errorf("the call's agent = %+v, want %+v", call.Agent, c.agent)
		}
	}
	for _, bad := range []string{"nobody", "team:nobody", "", " "} {
		if err := st.SetServerAgentQuestions(ctx, "demo", bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("agentQuestions %q: err = %v, want ErrInvalid", bad, err)
		}
	}
}

// TestAgentRoundsInbox: a round the agent is asked is in nobody's inbox
// nor count, and mailed to nobody, though its owner may still answer it; a
// round that asks the owner (a URL-mode question of a call assigned to
// someone else) is in the owner's inbox alone, mailed to the owner alone,
// and only the owner may answer it.
func TestAgentRoundsInbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "bob"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
		if err := st.SetContact(ctx, name, name+"@example.com", true); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetServerAgentQuestions(ctx, "demo", "bob"); err != nil {
		t.Fatal(err)
	}
	agent := &store.Agent{Name: "claude-code", Protocol: "2026-07-28", Can: store.AgentCan{Form: true, URL: true}}
	waiting := func(asks *string) string {
		t.Helper()
		call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "t", Agent: agent})
		if err != nil {
			t.Fatal(err)
		}
		err = st.AddRound(ctx, call.ID, 0, store.NewRound{
			InputRequests: json.RawMessage(`{"q":{"method":"elicitation/create","params":{"mode":"url","message":"Sign in","url":"https://example.com/x","elicitationId":"e1"}}}`),
			ExpiresAt:     time.Now().Add(time.Hour), Asks: asks,
		})
		if err != nil {
			t.Fatal(err)
		}
		return call.ID
	}
	askedAgent := waiting(new(store.AsksAgent))
	askedOwner := waiting(new(store.AsksOwner))
	assigned := waiting(nil)

	wantInbox := map[string][]string{"ada": {askedOwner}, "bob": {assigned}}
	for person, want := range wantInbox {
		items, _, count, err := st.InboxPage(ctx, person, 10, time.Now(), 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range items {
			got = append(got, it.CallID)
		}
		if len(got) != len(want) || (len(got) > 0 && got[0] != want[0]) {
			t.Errorf("%s's inbox = %v, want %v", person, got, want)
		}
		if person == "ada" && count != 2 {
			// The count is of the owner's calls waiting (askedOwner and
			// assigned), never of one the agent is asked.
			t.Errorf("ada's count = %d, want 2", count)
		}
	}
	for _, c := range []struct {
		call, person string
		mailed       bool
	}{
		{askedAgent, "ada", false}, {askedAgent, "bob", false},
		{askedOwner, "ada", true}, {askedOwner, "bob", false},
		{assigned, "bob", true},
	} {
		_, err := st.RoundMail(ctx, c.call, 1, c.person)
		if mailed := err == nil; mailed != c.mailed || (err != nil && !errors.Is(err, store.ErrNotFound)) {
			t.Errorf("round mail of %s to %s: err = %v, want mailed %v", c.call, c.person, err, c.mailed)
		}
	}
	for _, c := range []struct {
		call, person string
		may          bool
	}{
		{askedOwner, "bob", false}, {askedOwner, "ada", true}, {assigned, "bob", true}, {askedAgent, "bob", true},
	} {
		var assignedTo bool
		_, _, err := st.AnswerChecked(ctx, store.Answer{CallID: c.call, Seq: 1, Person: c.person,
			Decide: func(a store.Answering) (store.Decision, error) {
				assignedTo = a.Assigned
				return store.Decision{}, errors.New("only looking")
			}})
		if err == nil || assignedTo != c.may {
			t.Errorf("%s answering %s: assigned = %v, want %v (err %v)", c.person, c.call, assignedTo, c.may, err)
		}
	}
}

// TestReservedNames: no account may be named "agent" or "owner", in any
// case, and the refusal says why; an account a provider names so gets
// another name.
func TestReservedNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"agent", "Owner"} {
		_, err := st.CreateUser(ctx, name, "a long password", false)
		var se *store.Error
		if !errors.As(err, &se) || !errors.Is(err, store.ErrInvalid) || se.Message != store.ReservedNameMessage {
			t.Errorf("CreateUser(%q): err = %v, want the reserved-name refusal", name, err)
		}
		if _, err := st.EnsureUser(ctx, name); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("EnsureUser(%q): err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := st.CreateUser(ctx, "agents", "a long password", false); err != nil {
		t.Errorf("a name that only starts with a reserved word is refused: %v", err)
	}
}
