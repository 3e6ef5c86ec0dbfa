package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestAnswerCheckedAssigned reads, in the answer's own transaction, whether
// the person answering is whom the call's rounds are assigned to, as
// IsAssignee says: named, or an enabled member of the team named.
func TestAnswerCheckedAssigned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "bob", "carol", "dan", "eve"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateTeam(ctx, "approvers"); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"bob", "carol", "eve"} {
		if err := st.AddTeamMember(ctx, "approvers", m); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetUserDisabled(ctx, "eve", true); err != nil {
		t.Fatal(err)
	}
	errLook := errors.New("only looking")
	for _, tt := range []struct {
		name     string
		assignee string
		want     map[string]bool
	}{
		{"Team", "team:approvers", map[string]bool{"ada": false, "bob": true, "carol": true, "dan": false, "eve": false, "team:approvers": false}},
		{"Person", "dan", map[string]bool{"ada": false, "bob": false, "dan": true}},
		{"Owner", "", map[string]bool{"ada": true, "bob": false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := waitingCall(t, st, "ada", tt.assignee)
			for person, want := range tt.want {
				var got store.Answering
				_, _, err := st.AnswerChecked(ctx, store.Answer{CallID: id, Seq: 1, Person: person,
					Decide: func(a store.Answering) (store.Decision, error) {
						got = a
						return store.Decision{}, errLook
					}})
				if !errors.Is(err, errLook) {
					t.Fatalf("err = %v, want decide's", err)
				}
				if got.Call == nil || got.Call.ID != id || got.Round == nil || got.Round.Seq != 1 {
					t.Fatalf("decide read %+v", got)
				}
				if got.Assigned != want {
					t.Errorf("%s: assigned = %v, want %v", person, got.Assigned, want)
				}
				if is, err := st.IsAssignee(ctx, *got.Call.Assignee, person); err != nil || is != want {
					t.Errorf("%s: IsAssignee = %v, %v; want %v", person, is, err, want)
				}
			}
		})
	}
}
