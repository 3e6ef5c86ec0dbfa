package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/store/storetest"
)

// TestSlackIdentities: only an address an admin (or a provider) set is
// trusted to find a person in Slack; one the person typed is not. A
// Slack user is linked to one account, a link token spent once, an
// interaction taken once, and a team's channel set and cleared.
func TestSlackIdentities(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.New(storetest.NewPool(t), store.Options{Reach: store.ReachOptions{Slack: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ada", "bob", "carol"} {
		if _, err := st.CreateUser(ctx, name, "a long password", false); err != nil {
			t.Fatal(err)
		}
	}
	must(t, st.SetEmail(ctx, "ada", "ada@example.com"))                   // an admin's: trusted
	must(t, st.SetContact(ctx, "bob", "bob@example.com", true))           // his own: not
	must(t, st.SetEmail(ctx, "carol", "carol@example.com"))               // an admin's…
	must(t, st.SetContact(ctx, "carol", "carol@elsewhere.example", true)) // …then changed by her
	// A provider's: trusted when single sign-on says it verified it, and
	// always from SCIM.
	for name, verified := range map[string]bool{"dora": true, "eve": false} {
		if _, err := st.SignOnUser(ctx, store.SignOn{Issuer: "https://idp.example", Subject: name, Name: name,
			Email: name + "@example.com", EmailVerified: verified}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.CreateProvisionedUser(ctx, store.ProvisionUser{UserName: "finn", ExternalID: "x-finn",
		Email: "finn@example.com", Attributes: []byte(`{}`)}, store.Provisioner{Instance: "test", Token: "okta"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"ada": "ada@example.com", "bob": "", "carol": "",
		"dora": "dora@example.com", "eve": "", "finn": "finn@example.com"} {
		target, err := st.SlackTarget(ctx, waitingCall(t, st, "ada", name), 1)
		if err != nil || target.Person == nil || target.Person.TrustedEmail != want {
			t.Errorf("%s: target = %+v, %v; want trusted address %q", name, target.Person, err, want)
		}
	}

	p, err := st.LinkSlackByEmail(ctx, "ADA@example.com", "U0ADA")
	if err != nil || p.Name != "ada" {
		t.Fatalf("link by e-mail: %+v, %v", p, err)
	}
	if _, err := st.LinkSlackByEmail(ctx, "bob@example.com", "U0BOB"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("linked by an untrusted address: err = %v", err)
	}
	if p, err := st.UserBySlack(ctx, "U0ADA"); err != nil || p.Name != "ada" {
		t.Errorf("UserBySlack = %+v, %v", p, err)
	}
	if err := st.SetSlackUser(ctx, "bob", "not an id"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a bad Slack id: err = %v", err)
	}
	must(t, st.SetSlackUser(ctx, "bob", "U0ADA")) // Slack's user U0ADA is Bob's now
	if p, err := st.UserBySlack(ctx, "U0ADA"); err != nil || p.Name != "bob" {
		t.Errorf("after relinking, UserBySlack = %+v, %v", p, err)
	}

	if _, err := st.CreateTeam(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	if err := st.SetTeamChannel(ctx, "ops", "#general"); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a channel name, not an id: err = %v", err)
	}
	must(t, st.SetTeamChannel(ctx, "ops", "C0OPS"))
	id := waitingCall(t, st, "ada", "team:ops")
	if target, err := st.SlackTarget(ctx, id, 1); err != nil || target.Channel != "C0OPS" {
		t.Errorf("team target = %+v, %v", target, err)
	}
	must(t, st.SetTeamChannel(ctx, "ops", ""))
	if target, err := st.SlackTarget(ctx, id, 1); err != nil || target.Channel != "" || target.Person != nil {
		t.Errorf("after clearing, team target = %+v, %v", target, err)
	}

	for i, want := range []bool{true, false} {
		if first, err := st.TakeSlackInteraction(ctx, "view:V1:abc"); err != nil || first != want {
			t.Errorf("take #%d = %v, %v", i+1, first, err)
		}
	}
	expires := time.Now().Add(time.Minute)
	must(t, st.SpendSlackLink(ctx, "nonce-1", expires))
	if err := st.SpendSlackLink(ctx, "nonce-1", expires); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a link spent twice: err = %v", err)
	}
}

// TestSlackJobsWithTheRound: with Slack on, a waiting round enqueues its
// post, and the transaction that ends it enqueues the update of the
// messages it was posted as.
func TestSlackJobsWithTheRound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.NewPool(t)
	st, err := store.New(pool, store.Options{Reach: store.ReachOptions{Slack: true}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "ada", "a long password", false); err != nil {
		t.Fatal(err)
	}
	id := waitingCall(t, st, "ada", "ada")
	if n := slackJobs(t, pool, "slack_post", id); n != 1 {
		t.Fatalf("%d post jobs, want 1", n)
	}
	must(t, st.SaveSlackMessage(ctx, id, 1, store.SlackMessage{Channel: "D0ADA", TS: "1.000001"}))
	if msgs, err := st.SlackMessages(ctx, id, 1); err != nil || len(msgs) != 0 {
		t.Errorf("a waiting round's messages to update: %+v, %v", msgs, err)
	}
	must(t, st.CancelCall(ctx, id, store.AuditEntry{Actor: "ada", Action: "call.cancelled", Target: id}))
	if n := slackJobs(t, pool, "slack_update", id); n != 1 {
		t.Fatalf("%d update jobs after the cancel, want 1", n)
	}
	if msgs, err := st.SlackMessages(ctx, id, 1); err != nil || len(msgs) != 1 || msgs[0].TS != "1.000001" {
		t.Errorf("the cancelled round's messages: %+v, %v", msgs, err)
	}
}

func slackJobs(t *testing.T, pool *pgxpool.Pool, kind, callID string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `select count(*) from river_job where kind = $1 and args->>'call_id' = $2`,
		kind, callID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
