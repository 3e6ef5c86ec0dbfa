package store_test

import (
	"context"
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
