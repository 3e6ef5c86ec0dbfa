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

// TestActingFor: a person acts for themselves when asked; a delegate acts
// for the person away who named them, until the return; a delegate's own
// delegate does not; a disabled delegate does not; and coming back ends it.
func TestActingFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "erin", "finn", "gus"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	until := now.Add(48 * time.Hour)
	away := func(person, delegate string) {
		t.Helper()
		if err := st.SetAway(ctx, person, store.Away{Until: until, Delegate: delegate},
			store.AuditEntry{Actor: person, Action: "user.away", Target: person}); err != nil {
			t.Fatal(err)
		}
	}
	away("ada", "erin")
	away("erin", "finn") // erin's own delegate must not reach ada's rounds

	check := func(name, actor string, asked []string, at time.Time, want string, wantOK bool) {
		t.Helper()
		got, ok, err := st.ActingFor(ctx, actor, asked, at)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || ok != wantOK {
			t.Errorf("%s: ActingFor(%s, %v) = %q, %v; want %q, %v", name, actor, asked, got, ok, want, wantOK)
		}
	}
	check("self", "gus", []string{"ada", "gus"}, now, "gus", true)
	check("away person's delegate", "erin", []string{"gus", "ada"}, now, "ada", true)
	check("one step only", "finn", []string{"ada"}, now, "", false)
	check("the delegate's own delegate acts for the delegate", "finn", []string{"erin"}, now, "erin", true)
	check("not asked", "gus", []string{"ada"}, now, "", false)
	check("after the return date", "erin", []string{"ada"}, until.Add(time.Minute), "", false)

	if err := st.SetUserDisabled(ctx, "erin", true); err != nil {
		t.Fatal(err)
	}
	check("disabled delegate", "erin", []string{"ada"}, now, "", false)
	if err := st.SetUserDisabled(ctx, "erin", false); err != nil {
		t.Fatal(err)
	}
	check("enabled again", "erin", []string{"ada"}, now, "ada", true)

	if err := st.ClearAway(ctx, "ada", store.AuditEntry{Actor: "ada", Action: "user.back", Target: "ada"}); err != nil {
		t.Fatal(err)
	}
	check("back", "erin", []string{"ada"}, now, "", false)
	if a, err := st.AwayOf(ctx, "ada"); err != nil || a != nil {
		t.Errorf("ada back: AwayOf = %+v, %v; want nil", a, err)
	}
	if a, err := st.AwayOf(ctx, "erin"); err != nil || a == nil || a.Delegate != "finn" || !a.Until.Equal(until.Truncate(time.Microsecond)) {
		t.Errorf("erin away: AwayOf = %+v, %v", a, err)
	}
}

// TestSetAwayRefused: the away setting says in a sentence why it cannot be
// kept: a time past, oneself, an unknown or disabled delegate.
func TestSetAwayRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "erin", "olga"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SetUserDisabled(ctx, "olga", true); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	for _, tc := range []struct {
		name string
		away store.Away
		want string
	}{
		{"ErrPast", store.Away{Until: time.Now().Add(-time.Minute), Delegate: "erin"}, store.AwayPastMessage},
		{"ErrSelf", store.Away{Until: later, Delegate: "ada"}, store.AwaySelfMessage},
		{"ErrUnknown", store.Away{Until: later, Delegate: "nobody"}, store.AwayDelegateMessage},
		{"ErrDisabled", store.Away{Until: later, Delegate: "olga"}, store.AwayDelegateMessage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := st.SetAway(ctx, "ada", tc.away, store.AuditEntry{Actor: "ada", Action: "user.away", Target: "ada"})
			if !errors.Is(err, store.ErrInvalid) || err.Error() != tc.want {
				t.Errorf("SetAway = %v; want %q", err, tc.want)
			}
		})
	}
	if a, err := st.AwayOf(ctx, "ada"); err != nil || a != nil {
		t.Errorf("after refusals AwayOf = %+v, %v; want nil", a, err)
	}
}

// TestDelegateInboxAndAnswer: while ada is away with erin as delegate,
// erin's inbox lists ada's round, saying for whom, and erin's answer reads
// as hers on ada's behalf; a round that asks a URL-mode question stays
// ada's; back, ada's round leaves erin's inbox.
func TestDelegateInboxAndAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "erin"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	id := waitingCall(t, st, "admin", "ada")
	if err := st.SetAway(ctx, "ada", store.Away{Until: time.Now().Add(time.Hour), Delegate: "erin"},
		store.AuditEntry{Actor: "ada", Action: "user.away", Target: "ada"}); err != nil {
		t.Fatal(err)
	}
	items, err := inbox(ctx, st, "erin")
	if err != nil || len(items) != 1 || items[0].CallID != id || items[0].AwayFor == nil || *items[0].AwayFor != "ada" {
		t.Fatalf("erin's inbox = %+v, %v; want ada's round, for ada", items, err)
	}
	var forWhom string
	_, _, err = st.AnswerChecked(ctx, store.Answer{CallID: id, Seq: 1, Person: "erin",
		Decide: func(at store.Answering) (store.Decision, error) {
			if at.Assigned || at.Delegating != "ada" {
				t.Errorf("erin answering: assigned %v, delegating %q; want delegating for ada", at.Assigned, at.Delegating)
			}
			forWhom = at.For("erin")
			return store.Decision{Responses: json.RawMessage(`{"q":{"action":"accept","content":{}}}`), By: "erin", For: forWhom}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	rounds, err := st.Rounds(ctx, id)
	if err != nil || len(rounds) != 1 || rounds[0].AnsweredFor == nil || *rounds[0].AnsweredFor != "ada" || *rounds[0].AnsweredBy != "erin" {
		t.Errorf("the round = %+v, %v; want answered by erin for ada", rounds, err)
	}

	second := waitingCall(t, st, "admin", "ada")
	if err := st.ClearAway(ctx, "ada", store.AuditEntry{Actor: "ada", Action: "user.back", Target: "ada"}); err != nil {
		t.Fatal(err)
	}
	if items, err := inbox(ctx, st, "erin"); err != nil || len(items) != 0 {
		t.Errorf("erin's inbox once ada is back = %+v, %v; want none", items, err)
	}
	if items, err := inbox(ctx, st, "ada"); err != nil || len(items) != 1 || items[0].CallID != second || items[0].AwayFor != nil {
		t.Errorf("ada's inbox once back = %+v, %v; want her round", items, err)
	}
}

// TestHandOnRefusals: a round handed on records whom it was asked of and
// who gave it; a URL-mode question is refused with its sentence, and so
// is a round no longer waiting; Check's refusal comes first.
func TestHandOnRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "erin"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	allow := func(store.HandingOn) error { return nil }
	hand := func(id, to string, check func(store.HandingOn) error) error {
		_, err := st.HandOn(ctx, store.HandOver{CallID: id, Seq: 1, To: to, By: "ada", Check: check,
			Audit: store.AuditEntry{Actor: "ada", Action: "round.handed_on", Target: id}})
		return err
	}
	id := waitingCall(t, st, "admin", "ada")
	denied := errors.New("denied")
	if err := hand(id, "erin", func(store.HandingOn) error { return denied }); err != denied {
		t.Errorf("a refused check: %v", err)
	}
	if err := hand(id, "erin", allow); err != nil {
		t.Fatal(err)
	}
	rounds, err := st.Rounds(ctx, id)
	if err != nil || rounds[0].HandedFrom == nil || *rounds[0].HandedFrom != "ada" || *rounds[0].HandedTo != "erin" || *rounds[0].HandedBy != "ada" {
		t.Errorf("the round handed on = %+v, %v", rounds, err)
	}
	if err := hand(id, "erin", allow); !errors.Is(err, store.ErrConflict) {
		t.Errorf("handing on to whom has it: %v, want a conflict", err)
	}
	if err := answerRound(ctx, st, id, 1, `{"q":{"action":"decline"}}`, "erin"); err != nil {
		t.Fatal(err)
	}
	if err := hand(id, "ada", allow); !errors.Is(err, store.ErrConflict) {
		t.Errorf("handing on an answered round: %v, want a conflict", err)
	}

	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddRound(ctx, call.ID, 0, store.NewRound{
		InputRequests: json.RawMessage(`{"u":{"method":"elicitation/create","params":{"mode":"url","message":"Connect","url":"https://example.com/c","elicitationId":"e1"}}}`),
		ExpiresAt:     time.Now().Add(time.Hour),
	}); err != nil {
		t.Fatal(err)
	}
	if err := hand(call.ID, "erin", allow); !errors.Is(err, store.ErrConflict) || err.Error() != store.URLModeHandOnMessage {
		t.Errorf("handing on a URL-mode question: %v, want %q", err, store.URLModeHandOnMessage)
	}
}
