package store_test

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

// TestSignOnCheck: a signed-on account is checked again at its provider by
// one request at a time, across instances, at most once per interval; what
// the provider then says takes the admin rights and teams away, and when it
// no longer vouches for the person their sessions end and tokens stop until
// they sign on again. The grant to ask with is kept encrypted.
func TestSignOnCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	other, err := store.New(pool) // another instance
	if err != nil {
		t.Fatal(err)
	}
	key := bytes.Repeat([]byte{7}, 32)
	for _, s := range []*store.Store{st, other} {
		if err := s.UseCredentialsKey(key); err != nil {
			t.Fatal(err)
		}
	}
	for _, team := range []string{"approvers", "ops"} {
		if _, err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
	}
	so := store.SignOn{Issuer: "https://idp.example", Subject: "sub-ada", Name: "ada", Groups: []string{"approvers"},
		Admin: true, Grant: "refresh-token-1", Recheck: time.Hour}
	u, err := st.SignOnUser(ctx, so)
	if err != nil {
		t.Fatal(err)
	}
	_, token, err := st.CreateToken(ctx, u.ID, "script")
	if err != nil {
		t.Fatal(err)
	}
	session, err := st.CreateSession(ctx, u.ID, "test", "127.0.0.1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var enc []byte
	if err := pool.QueryRow(ctx, `select grant_enc from user_identities where user_id = $1`, u.ID).Scan(&enc); err != nil {
		t.Fatal(err)
	}
	if len(enc) == 0 || bytes.Contains(enc, []byte("refresh-token-1")) {
		t.Errorf("the grant is kept as %q; want it encrypted", enc)
	}
	if got, _ := st.UserByToken(ctx, token); got.SignOnCheckDue == nil || time.Until(*got.SignOnCheckDue) < 59*time.Minute {
		t.Errorf("the token's user says the check is due at %v; want an hour from now", got.SignOnCheckDue)
	}
	if _, ok, err := st.ClaimSignOnCheck(ctx, u.ID, time.Hour); ok || err != nil {
		t.Fatalf("a check not yet due was taken on (err %v)", err)
	}
	due := func() {
		t.Helper()
		if _, err := pool.Exec(ctx, `update user_identities set check_due_at = now() where user_id = $1`, u.ID); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("OneCheckAcrossInstances", func(t *testing.T) {
		due()
		var mu sync.Mutex
		var won []store.SignOnCheck
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				s := []*store.Store{st, other}[i%2]
				chk, ok, err := s.ClaimSignOnCheck(ctx, u.ID, time.Hour)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won = append(won, chk)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(won) != 1 || won[0].Grant != "refresh-token-1" || won[0].Subject != "sub-ada" {
			t.Fatalf("checks taken on: %+v; want one, with the grant kept at sign-in", won)
		}
		fresh, err := st.SignOnChecked(ctx, won[0], store.SignOn{Groups: []string{"ops"}, Grant: "refresh-token-2"})
		if err != nil {
			t.Fatal(err)
		}
		if fresh.IsAdmin {
			t.Error("still an admin after the provider took the admin group away")
		}
		if got, err := other.UserByToken(ctx, token); err != nil || got.IsAdmin {
			t.Errorf("the token on another instance: %+v, %v; want it without admin rights", got, err)
		}
		if teams, _ := st.SignOnTeams(ctx, u.ID); !slices.Equal(teams, []string{"ops"}) {
			t.Errorf("teams by sign-on = %v, want ops only", teams)
		}
	})

	t.Run("SignOnMeanwhileWins", func(t *testing.T) {
		due()
		chk, ok, err := st.ClaimSignOnCheck(ctx, u.ID, time.Hour)
		if !ok || err != nil {
			t.Fatalf("no check taken on (%v)", err)
		}
		if chk.Grant != "refresh-token-2" {
			t.Errorf("grant = %q, want the one the last check kept", chk.Grant)
		}
		if _, err := st.SignOnUser(ctx, so); err != nil {
			t.Fatal(err)
		}
		fresh, err := st.SignOnChecked(ctx, chk, store.SignOn{Grant: "stale"})
		if err != nil {
			t.Fatal(err)
		}
		if !fresh.IsAdmin {
			t.Error("a check begun before a sign-on undid what the sign-on said")
		}
		if refused, err := st.SignOnRefused(ctx, chk); refused || err != nil {
			t.Errorf("a check begun before a sign-on refused the person (%v)", err)
		}
	})

	t.Run("Refused", func(t *testing.T) {
		due()
		chk, ok, err := other.ClaimSignOnCheck(ctx, u.ID, time.Hour)
		if !ok || err != nil {
			t.Fatalf("no check taken on (%v)", err)
		}
		if refused, err := other.SignOnRefused(ctx, chk); !refused || err != nil {
			t.Fatalf("refused = %v, %v", refused, err)
		}
		if _, err := st.UserByToken(ctx, token); !errors.Is(err, store.ErrSignOnAgain) || !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the token of a person the provider refused: err = %v, want ErrSignOnAgain", err)
		}
		if _, _, err := st.UserBySession(ctx, session); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the session of a person the provider refused: err = %v, want it ended", err)
		}
		if teams, _ := st.TeamsOf(ctx, "ada"); len(teams) != 0 {
			t.Errorf("teams = %v, want those sign-on gave gone", teams)
		}
		if _, ok, _ := st.ClaimSignOnCheck(ctx, u.ID, time.Hour); ok {
			t.Error("a refused account is checked again before it signs on")
		}
		if _, err := st.SignOnUser(ctx, so); err != nil {
			t.Fatal(err)
		}
		if got, err := st.UserByToken(ctx, token); err != nil || !got.IsAdmin {
			t.Errorf("after signing on again, the token: %+v, %v; want it working, with the admin rights given", got, err)
		}
	})
}
