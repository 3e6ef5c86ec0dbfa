package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mcp-rounds/rounds/store"
)

func TestSignOnUser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newAdminStore(t)
	for _, team := range []string{"approvers", "ops", "auditors"} {
		if _, err := st.CreateTeam(ctx, team); err != nil {
			t.Fatal(err)
		}
	}
	// Someone already has the name the provider gives.
	if _, err := st.CreateUser(ctx, "ada", "a long password", false); err != nil {
		t.Fatal(err)
	}
	first := store.SignOn{Issuer: "https://idp.example", Subject: "123", Name: "ada", Email: "ada@example.com",
		Groups: []string{"Approvers", "unknown"}, Admin: true}
	u, err := st.SignOnUser(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if u.Name != "ada-2" || !u.IsAdmin || u.PasswordHash != nil {
		t.Errorf("first sign-in made %+v; want ada-2, an admin without a password", u)
	}
	if err := st.AddTeamMember(ctx, "ops", u.Name); err != nil {
		t.Fatal(err)
	}

	t.Run("SameAccountNewGroups", func(t *testing.T) {
		again := first
		again.Name, again.Email, again.Groups, again.Admin = "someone-else", "", []string{"auditors"}, false
		u2, err := st.SignOnUser(ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		if u2.ID != u.ID || u2.Name != "ada-2" || u2.IsAdmin {
			t.Errorf("second sign-in = %+v; want the same account, no longer an admin", u2)
		}
		teams, _ := st.TeamsOf(ctx, "ada-2")
		if !slices.Equal(teams, []string{"auditors", "ops"}) {
			t.Errorf("teams = %v; want auditors (groups) and ops (by hand), approvers left", teams)
		}
		bySignOn, _ := st.SignOnTeams(ctx, u.ID)
		if !slices.Equal(bySignOn, []string{"auditors"}) {
			t.Errorf("teams by sign-on = %v", bySignOn)
		}
		contact, _ := st.Contact(ctx, "ada-2")
		if contact.Email != "ada@example.com" {
			t.Errorf("email = %q; an identity without one keeps the one known", contact.Email)
		}
	})

	t.Run("OtherIssuerSameSubject", func(t *testing.T) {
		other := first
		other.Issuer = "https://other.example"
		u3, err := st.SignOnUser(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		if u3.ID == u.ID {
			t.Error("an identity of another issuer with the same subject found the same account")
		}
	})

	t.Run("ErrDisabled", func(t *testing.T) {
		if err := st.SetUserDisabled(ctx, "ada-2", true); err != nil {
			t.Fatal(err)
		}
		if _, err := st.SignOnUser(ctx, first); !errors.Is(err, store.ErrAccountDisabled) {
			t.Errorf("err = %v; want the disabled account refused", err)
		}
	})
}

func TestSignOnName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"ada.lovelace@example.com": "ada.lovelace@example.com",
		"Ada Lovelace":             "Ada-Lovelace",
		"__x":                      "x",
		"名前":                       "user",
		"":                         "user",
	} {
		if got := store.SignOnName(in); got != want {
			t.Errorf("SignOnName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSignOnFindsProvisioned signs in, for the first time, a person a
// provider provisioned with their subject as externalId: the sign-in lands
// in that account, not a new one; someone with the same name but another
// subject gets a new one.
func TestSignOnFindsProvisioned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := newAdminStore(t)
	p, err := st.CreateProvisionedUser(ctx, store.ProvisionUser{UserName: "ada@example.com", ExternalID: "00u1ada",
		Attributes: []byte(`{}`)}, store.Provisioner{Instance: "test", Token: "okta"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.SignOnUser(ctx, store.SignOn{Issuer: "https://okta.example", Subject: "00u1ada", Name: "ada@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != p.ID {
		t.Errorf("signed in to account %d (%s), want the provisioned %d", u.ID, u.Name, p.ID)
	}
	other, err := st.SignOnUser(ctx, store.SignOn{Issuer: "https://okta.example", Subject: "00u1eve", Name: "ada@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if other.ID == p.ID || other.Name != "ada@example.com-2" {
		t.Errorf("another subject with the same name got %+v; want an account of its own", other)
	}
}
