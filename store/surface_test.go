package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestRoundAnsweredAutomatically stores a round of roots questions already
// answered, queues the call for its retry, and says who answered.
func TestRoundAnsweredAutomatically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetServerFeatures(ctx, "demo", false, true); err != nil {
		t.Fatal(err)
	}
	if err := st.SetServerRoots(ctx, "demo", []store.Root{{URI: "file:///srv/data", Name: "Data"}}); err != nil {
		t.Fatal(err)
	}
	call, err := st.CreateCall(ctx, store.NewCall{ServerID: srv.ID, Owner: "ada", Method: "tools/call", Target: "show_roots"})
	if err != nil {
		t.Fatal(err)
	}
	if !call.ServerRoots || call.ServerSampling || string(store.RootsResult(call.ServerRootsList)) != `{"roots":[{"uri":"file:///srv/data","name":"Data"}]}` {
		t.Fatalf("call's server settings: roots %v, sampling %v, list %s", call.ServerRoots, call.ServerSampling, call.ServerRootsList)
	}
	responses := json.RawMessage(`{"r":` + string(store.RootsResult(call.ServerRootsList)) + `}`)
	err = st.AddRound(ctx, call.ID, 0, store.NewRound{
		InputRequests: json.RawMessage(`{"r":{"method":"roots/list"}}`), ExpiresAt: time.Now().Add(time.Hour),
		Responses: responses, Instance: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Call(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	rounds, err := st.Rounds(ctx, call.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != store.CallQueued || got.CurrentSeq != 1 || len(rounds) != 1 {
		t.Fatalf("call %s at %d with %d rounds; want queued at round 1", got.Status, got.CurrentSeq, len(rounds))
	}
	r := rounds[0]
	if r.Status != store.RoundAnswered || r.AnsweredBy == nil || *r.AnsweredBy != store.AnsweredAutomatically || r.AnsweredAt == nil {
		t.Errorf("round = %+v; want answered automatically", r)
	}
	if a, err := st.StartAttempt(ctx, call.ID, 1); err != nil || string(a.Round.Responses) != string(responses) {
		t.Errorf("the retry's attempt: %v, %+v", err, a)
	}
}

// TestRefuseRound ends a round and its call once, of many concurrent tries
// (a declined sampling request), with nothing queued.
func TestRefuseRound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	id := pendingRound(t, st)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() {
			_, _, errs[i] = st.AnswerChecked(ctx, store.Answer{CallID: id, Seq: 1, Person: "ada",
				Decide: func(store.Answering) (store.Decision, error) {
					return store.Decision{Responses: json.RawMessage(`{"task":{"action":"decline"}}`), By: "ada", Refusal: "Declined."}, nil
				}})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("err = %v", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d refusals went through, want 1", ok)
	}
	call, err := st.Call(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if call.Status != store.CallCancelled || call.Error == nil || *call.Error != "Declined." || call.FinishedAt == nil {
		t.Errorf("call = %s, %v", call.Status, call.Error)
	}
	if err := answerRound(ctx, st, id, 1, `{}`, "ada"); !errors.Is(err, store.ErrConflict) {
		t.Errorf("answering after the refusal: %v, want ErrConflict", err)
	}
}
