package store_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestMailLinkUsedOnce: a mail's links are found by their hash, and of
// answers made with them at once, one is stored and marks them used in its
// transaction; the rest store nothing.
func TestMailLinkUsedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "ada", "a long password", false); err != nil {
		t.Fatal(err)
	}
	id := waitingCall(t, st, "bob", "ada")
	hash := bytes.Repeat([]byte{3}, 32)
	if err := st.AddMailLink(ctx, id, 1, store.NewMailLink{Hash: hash, Kind: "round", Person: "ada"}); err != nil {
		t.Fatal(err)
	}
	l, err := st.MailLink(ctx, hash)
	if err != nil || l.CallID != id || l.Seq != 1 || l.Person != "ada" || l.Kind != "round" || l.UsedAt != nil {
		t.Fatalf("the link reads %+v, %v", l, err)
	}
	if _, err := st.MailLink(ctx, bytes.Repeat([]byte{4}, 32)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an unknown hash: %v", err)
	}
	var stored, refused atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			_, _, err := st.AnswerChecked(ctx, store.Answer{CallID: id, Seq: 1, Person: "ada",
				Decide: func(store.Answering) (store.Decision, error) {
					return store.Decision{Responses: json.RawMessage(`{"q":{"action":"decline"}}`), By: "ada", MailLink: hash}, nil
				}})
			switch {
			case err == nil:
				stored.Add(1)
			case errors.Is(err, store.ErrConflict):
				refused.Add(1)
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if stored.Load() != 1 || refused.Load() != 5 {
		t.Errorf("%d answers stored, %d refused; want 1 and 5", stored.Load(), refused.Load())
	}
	if l, err := st.MailLink(ctx, hash); err != nil || l.UsedAt == nil {
		t.Errorf("after the answer the link reads %+v, %v: not used", l, err)
	}
}
