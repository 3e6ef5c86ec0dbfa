package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-rounds/rounds/store"
)

// TestDeadlines gives a server an escalation to team leads and decline at
// the deadline. A round past its escalation time escalates once however
// many jobs run at once; a round past its deadline is answered with
// decline once, and left alone by the expiry sweep meanwhile.
func TestDeadlines(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateTeam(ctx, "leads"); err != nil {
		t.Fatal(err)
	}
	t.Run("ErrEscalateToNobody", func(t *testing.T) {
		err := st.SetServerDeadlines(ctx, "demo", store.Deadlines{EscalateAfter: time.Hour, EscalateTo: "team:nobody"})
		if !errors.Is(err, store.ErrInvalid) {
			t.Errorf("err = %v, want ErrInvalid", err)
		}
	})
	if err := st.SetServerDeadlines(ctx, "demo", store.Deadlines{EscalateAfter: time.Millisecond, EscalateTo: "team:leads",
		OnExpiry: store.OnExpiryDecline}); err != nil {
		t.Fatal(err)
	}

	t.Run("EscalatesOnce", func(t *testing.T) {
		id := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
		if e, err := st.EscalateRound(ctx, "runner", id, 1, time.Now().Add(-time.Minute)); e != nil || err != nil {
			t.Errorf("escalated before its time: %+v, %v", e, err)
		}
		var n atomic.Int32
		var wg sync.WaitGroup
		for range 6 {
			wg.Go(func() {
				e, err := st.EscalateRound(ctx, "runner", id, 1, time.Now())
				if err != nil {
					t.Error(err)
				}
				if e != nil {
					n.Add(1)
				}
			})
		}
		wg.Wait()
		if n.Load() != 1 {
			t.Errorf("escalated %d times, want once", n.Load())
		}
		call, _ := st.Call(ctx, id)
		plan, _ := st.RoundPlan(ctx, id, 1)
		if call.Assignee == nil || *call.Assignee != "team:leads" || plan.EscalatedFrom == nil || *plan.EscalatedFrom != "ada" {
			t.Errorf("assignee = %v, escalated from %v; want team:leads, from ada", call.Assignee, plan.EscalatedFrom)
		}
		var audits int
		_ = pool.QueryRow(ctx, `select count(*) from audit_log where action = 'round.escalated' and target = $1`, id).Scan(&audits)
		if audits != 1 {
			t.Errorf("%d audit entries, want 1", audits)
		}
		if done, err := st.AnswerAtDeadline(ctx, "runner", id, 1, json.RawMessage(`{}`), "", time.Now()); done || err != nil {
			t.Errorf("answered before the deadline: %v, %v", done, err)
		}
	})

	t.Run("DeclinedAtDeadlineOnce", func(t *testing.T) {
		id := adminPendingRound(t, st, srv, time.Now().Add(-time.Second))
		if expired, err := st.ExpireDueRounds(ctx, "runner"); err != nil || len(expired) != 0 {
			t.Errorf("the sweep expired %v (%v); a round declined at its deadline is its job's", expired, err)
		}
		if err := st.ExpireRound(ctx, "runner", id, 1); err != nil {
			t.Fatal(err)
		}
		responses := json.RawMessage(`{"a":{"action":"decline"},"b":{"action":"decline"}}`)
		var n atomic.Int32
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				done, err := st.AnswerAtDeadline(ctx, "runner", id, 1, responses, "", time.Now())
				if err != nil {
					t.Error(err)
				}
				if done {
					n.Add(1)
				}
			})
		}
		wg.Wait()
		if n.Load() != 1 {
			t.Errorf("answered %d times, want once", n.Load())
		}
		call, _ := st.Call(ctx, id)
		r, _ := st.Round(ctx, id, 1)
		if call.Status != store.CallQueued || r.Status != store.RoundAnswered || r.AnsweredBy == nil || *r.AnsweredBy != store.AnsweredAtDeadline {
			t.Errorf("call %s, round %s by %v; want the call queued with the round answered at the deadline", call.Status, r.Status, r.AnsweredBy)
		}
	})
}

// TestEscalateToTheGone: a round whose plan escalates to a person disabled
// since, or to a team deleted since, goes to the admins' queue
// (team:admins) when its time comes, and the audit entry says why.
func TestEscalateToTheGone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, pool := newAdminStore(t)
	srv, err := st.UpsertServer(ctx, "demo", "http://127.0.0.1:1/mcp")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "root", "a long enough password", true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, to string
		gone     func() error
		why      string
	}{
		{"PersonDisabled", "bob", func() error { return st.SetUserDisabled(ctx, "bob", true) }, store.EscalateWhyDisabled},
		{"TeamDeleted", "team:leads", func() error { return st.DeleteTeam(ctx, "leads") }, store.EscalateWhyTeamDeleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := st.CreateUser(ctx, "bob", "a long enough password", false); err != nil && !errors.Is(err, store.ErrConflict) {
				t.Fatal(err)
			}
			if _, err := st.CreateTeam(ctx, "leads"); err != nil && !errors.Is(err, store.ErrConflict) {
				t.Fatal(err)
			}
			if err := st.SetServerDeadlines(ctx, "demo", store.Deadlines{EscalateAfter: time.Millisecond, EscalateTo: tc.to}); err != nil {
				t.Fatal(err)
			}
			id := adminPendingRound(t, st, srv, time.Now().Add(time.Hour))
			if err := tc.gone(); err != nil {
				t.Fatal(err)
			}
			e, err := st.EscalateRound(ctx, "runner", id, 1, time.Now())
			if err != nil || e == nil {
				t.Fatalf("EscalateRound = %+v, %v", e, err)
			}
			call, _ := st.Call(ctx, id)
			if call.Assignee == nil || *call.Assignee != "team:"+store.AdminsTeam {
				t.Errorf("the round waits for %v, want team:admins", call.Assignee)
			}
			var detail map[string]any
			if err := pool.QueryRow(ctx, `select detail from audit_log where action = 'round.escalated' and target = $1`, id).
				Scan(&detail); err != nil {
				t.Fatal(err)
			}
			if detail["to"] != "team:admins" || detail["planned"] != tc.to || detail["why"] != tc.why {
				t.Errorf("audit detail = %v; want to team:admins, planned %s, why %q", detail, tc.to, tc.why)
			}
			// The admins' queue exists, with the admins in it.
			var members []string
			if err := pool.QueryRow(ctx, `select coalesce(array_agg(u.name), '{}') from teams t join team_members m on m.team_id = t.id
				join users u on u.id = m.user_id where t.name = 'admins'`).Scan(&members); err != nil {
				t.Fatal(err)
			}
			if len(members) != 1 || members[0] != "root" {
				t.Errorf("the admins' queue has %v, want root", members)
			}
			if again, err := st.EscalateRound(ctx, "runner", id, 1, time.Now()); again != nil || err != nil {
				t.Errorf("escalated twice: %+v, %v", again, err)
			}
		})
	}
}
