package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/queue"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestTeamInbox puts a team's waiting round in every member's inbox and
// nobody else's; the caller keeps only rounds waiting on them.
func TestTeamInbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "bob", "carol", "dan"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateTeam(ctx, "approvers"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, "approvers"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second team of the same name: err = %v", err)
	}
	if _, err := st.CreateTeam(ctx, "bad name\n"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a team named with a line break: err = %v", err)
	}
	for _, m := range []string{"bob", "carol", "bob"} {
		if err := st.AddTeamMember(ctx, "approvers", m); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.AddTeamMember(ctx, "approvers", "nobody"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("adding an unknown user: err = %v", err)
	}
	if err := st.CheckAssignee(ctx, "team:nobody"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an unknown team: err = %v", err)
	}
	if err := st.CheckAssignee(ctx, "zed"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an unknown person: err = %v", err)
	}
	id := waitingCall(t, st, "ada", "team:approvers")
	for name, want := range map[string]int{"ada": 0, "bob": 1, "carol": 1, "dan": 0} {
		items, err := inbox(ctx, st, name)
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != want {
			t.Errorf("%s's inbox has %d rounds, want %d", name, len(items), want)
		}
	}
	if err := st.RemoveTeamMember(ctx, "approvers", "carol"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"ada": false, "bob": true, "carol": false, "team:approvers": false} {
		call, err := st.Call(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := st.IsAssignee(ctx, *call.Assignee, name); err != nil || ok != want {
			t.Errorf("IsAssignee(%s) = %v, %v; want %v", name, ok, err, want)
		}
	}
	if err := st.ReassignCall(ctx, id, "dan", store.AuditEntry{Instance: "test", Actor: "admin", Action: "admin.call.reassigned", Target: id}); err != nil {
		t.Fatal(err)
	}
	if items, _ := inbox(ctx, st, "dan"); len(items) != 1 {
		t.Errorf("dan's inbox after the reassignment has %d rounds", len(items))
	}
	if items, _ := inbox(ctx, st, "bob"); len(items) != 0 {
		t.Errorf("bob's inbox after the reassignment has %d rounds", len(items))
	}
}

// TestRoundMailOnce runs the same mail from many jobs at once: one sends it.
func TestRoundMailOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "ada", "a long password", false); err != nil {
		t.Fatal(err)
	}
	if err := st.SetContact(ctx, "ada", "ada@example.com", true); err != nil {
		t.Fatal(err)
	}
	if err := st.SetContact(ctx, "ada", "ada@example.com\r\nBcc: x@example.com", true); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("an address with a line break: err = %v", err)
	}
	id := waitingCall(t, st, "bob", "ada")
	if _, err := st.RoundMail(ctx, id, 1, "ada"); err != nil {
		t.Fatalf("ada's mail: %v", err)
	}
	if _, err := st.RoundMail(ctx, id, 1, "bob"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("bob, who is not asked, would be mailed: %v", err)
	}
	var sent atomic.Int32
	var wg sync.WaitGroup
	args := queue.MailArgs{CallID: id, Seq: 1, Recipient: "ada", Mail: queue.MailWaiting}
	for range 8 {
		wg.Go(func() {
			if _, err := st.SendRoundMailOnce(ctx, args, func() error {
				time.Sleep(20 * time.Millisecond) // an SMTP server taking its time
				sent.Add(1)
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := sent.Load(); n != 1 {
		t.Errorf("the mail was sent %d times", n)
	}
	// A send that fails leaves nothing behind: the next attempt sends.
	args.Mail = queue.MailReminder
	if _, err := st.SendRoundMailOnce(ctx, args, func() error { return errors.New("451 try later") }); err == nil {
		t.Fatal("a failed send was not reported")
	}
	if ok, err := st.SendRoundMailOnce(ctx, args, func() error { return nil }); err != nil || !ok {
		t.Errorf("the retry after a failed send: %v, %v", ok, err)
	}
	if err := st.SetContact(ctx, "ada", "ada@example.com", false); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RoundMail(ctx, id, 1, "ada"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ada switched mail off, and would still be mailed: %v", err)
	}
}

// answerRound stores responses as by's answers to round seq, as the
// answer pages and the API do.
func answerRound(ctx context.Context, st *store.Store, callID string, seq int, responses, by string) error {
	_, _, err := st.AnswerChecked(ctx, store.Answer{CallID: callID, Seq: seq, Person: "ada",
		Decide: func(store.Answering) (store.Decision, error) {
			return store.Decision{Responses: json.RawMessage(responses), By: by}, nil
		}})
	return err
}

// inbox lists the rounds waiting on person, as the inbox page reads them.
func inbox(ctx context.Context, st *store.Store, person string) ([]store.InboxItem, error) {
	items, _, _, err := st.InboxPage(ctx, person, 10, time.Now(), 10)
	return items, err
}

func waitingCall(t *testing.T, st *store.Store, owner, assignee string) string {
	t.Helper()
	ctx := context.Background()
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: owner, Method: "tools/call", Target: "t", Assignee: assignee})
	if err != nil {
		t.Fatal(err)
	}
	err = st.AddRound(ctx, call.ID, 0, store.NewRound{
		InputRequests: json.RawMessage(`{"q":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{}}}}}`),
		ExpiresAt:     time.Now().Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	return call.ID
}
