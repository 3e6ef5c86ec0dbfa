package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestInboxPageSettled: the inbox page lists the rounds that left a
// person's inbox, latest first, each with how it ended: declined and
// cancelled say so, a team's round is its members', and nobody else's
// rounds are listed. The round still waiting is listed as waiting, and
// counted.
func TestInboxPageSettled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "bob", "dan"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateTeam(ctx, "approvers"); err != nil {
		t.Fatal(err)
	}
	if err := st.AddTeamMember(ctx, "approvers", "bob"); err != nil {
		t.Fatal(err)
	}
	answer := func(id, responses, by string) {
		t.Helper()
		if err := answerRound(ctx, st, id, 1, responses, by); err != nil {
			t.Fatal(err)
		}
	}
	declined := waitingCall(t, st, "ada", "")
	answer(declined, `{"q":{"action":"decline"}}`, "ada")
	teams := waitingCall(t, st, "ada", "team:approvers")
	answer(teams, `{"q":{"action":"accept","content":{}}}`, "bob")
	others := waitingCall(t, st, "dan", "")
	answer(others, `{"q":{"action":"accept","content":{}}}`, "dan")
	cancelled := waitingCall(t, st, "ada", "")
	if err := st.EndRound(ctx, cancelled, 1, store.RoundCancelled, "no longer needed",
		store.AuditEntry{Instance: "test", Actor: "admin", Action: "admin.round.cancelled", Target: cancelled}); err != nil {
		t.Fatal(err)
	}
	waiting := waitingCall(t, st, "ada", "")

	for person, want := range map[string][][2]string{
		"ada": {{cancelled, "cancelled"}, {declined, "declined"}},
		"bob": {{teams, "answered"}},
	} {
		waitingItems, items, count, err := st.InboxPage(ctx, person, 10, time.Now().Add(-time.Hour), 10)
		if err != nil {
			t.Fatal(err)
		}
		if person == "ada" && (len(waitingItems) != 1 || waitingItems[0].CallID != waiting || count != 1) {
			t.Errorf("ada's waiting rounds = %+v, counted %d; want the one still waiting", waitingItems, count)
		}
		var got [][2]string
		for _, it := range items {
			got = append(got, [2]string{it.CallID, it.Outcome})
			if it.CallID == waiting {
				t.Errorf("%s's settled rounds list the round still waiting", person)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%s's settled rounds = %v, want %v", person, got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%s's settled round %d = %v, want %v", person, i, got[i], want[i])
			}
		}
	}
	if _, items, _, err := st.InboxPage(ctx, "ada", 10, time.Now().Add(time.Minute), 10); err != nil || len(items) != 0 {
		t.Errorf("rounds settled after now: %d, %v; want none", len(items), err)
	}
}
