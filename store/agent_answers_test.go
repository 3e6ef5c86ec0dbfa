package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// Two questions of one round answered at the same moment, as a
// 2025-11-25 agent's two responses reaching two instances: exactly one of
// the parts returns the whole set; a third part, and a part for a question
// never asked, are refused once the round has its answer.
func TestAgentAnswerParts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"a", "b"}
	for range 20 {
		id := waitingCall(t, st, "ada", "")
		var wg sync.WaitGroup
		wholes := make(chan map[string]json.RawMessage, 2)
		for _, k := range keys {
			wg.Go(func() {
				all, err := st.AgentAnswerPart(ctx, id, 1, keys, k, json.RawMessage(`{"action":"accept","content":{"k":"`+k+`"}}`))
				if err != nil {
					t.Error(err)
				}
				if all != nil {
					wholes <- all
				}
			})
		}
		wg.Wait()
		close(wholes)
		var got []map[string]json.RawMessage
		for w := range wholes {
			got = append(got, w)
		}
		if len(got) != 1 || len(got[0]) != 2 {
			t.Fatalf("want one whole set of two answers, got %v", got)
		}
		if _, err := st.AgentAnswerPart(ctx, id, 1, keys, "c", json.RawMessage(`{}`)); !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("a question never asked: want ErrInvalid, got %v", err)
		}
		if err := answerRound(ctx, st, id, 1, `{"q":{"action":"decline"}}`, "ada"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AgentAnswerPart(ctx, id, 1, keys, "a", json.RawMessage(`{}`)); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("a part after the answer: want ErrConflict, got %v", err)
		}
	}
}
