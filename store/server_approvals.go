package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/mcp-rounds/rounds/approvals"
)

// ErrApprovalsFromFile is the sentence an admin reads when the servers file
// owns a server's approval rules.
const ErrApprovalsFromFile = "The servers file sets this server's approval rules at each start; change them there."

// Policy returns the server's approval rules, compiled. Stored rules were
// checked when set; rules that no longer compile (a newer Rounds reading
// older rows) are an error, never "no rules".
func (s *Server) Policy() (*approvals.Policy, error) {
	p, err := approvals.Parse(s.Approvals)
	if err != nil {
		return nil, fmt.Errorf("server %s: approvals: %w", s.Name, err)
	}
	return p, nil
}

// ServerPolicy is srv.Policy, compiled once per distinct set of rules on
// this instance: a call's gate reads it without compiling CEL again.
func (s *Store) ServerPolicy(srv *Server) (*approvals.Policy, error) {
	key := string(srv.Approvals)
	s.serversMu.Lock()
	p, ok := s.policies[key]
	s.serversMu.Unlock()
	if ok {
		return p, nil
	}
	p, err := srv.Policy()
	if err != nil {
		return nil, err
	}
	s.serversMu.Lock()
	if s.policies == nil || len(s.policies) > 1000 {
		s.policies = map[string]*approvals.Policy{}
	}
	s.policies[key] = p
	s.serversMu.Unlock()
	return p, nil
}

// Unanswerable lists the people and teams p asks who cannot answer now:
// no enabled account, or no team, by that name. Rules may name them before
// they are provisioned, so this warns rather than refuses.
func (s *Store) Unanswerable(ctx context.Context, p *approvals.Policy) ([]string, error) {
	var out []string
	for _, r := range p.Rules() {
		for _, a := range r.Ask {
			if slices.Contains(out, a) {
				continue
			}
			err := s.CheckAssignee(ctx, a)
			if errors.Is(err, ErrInvalid) {
				out = append(out, a)
			} else if err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// policyJSON is p as stored: nil (SQL null) for no rules.
func policyJSON(p *approvals.Policy) (json.RawMessage, error) {
	if p.Empty() {
		return nil, nil
	}
	return json.Marshal(p)
}

// SetServerApprovals sets a server's approval rules from its admin page,
// with the audit entry, in one transaction. Rules the servers file set
// are refused with ErrConflict.
func (s *Store) SetServerApprovals(ctx context.Context, name string, p *approvals.Policy, entry AuditEntry) error {
	s.forgetServers() // see ServerToCall
	raw, err := policyJSON(p)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var fromFile bool
		err := tx.QueryRow(ctx, `select approvals_from_file from servers where name = $1 for update`, name).Scan(&fromFile)
		if err != nil {
			return translate(err, "server "+name)
		}
		if fromFile {
			return conflict(ErrApprovalsFromFile)
		}
		if _, err := tx.Exec(ctx, `update servers set approvals = $2, updated_at = now() where name = $1`, name, raw); err != nil {
			return err
		}
		return auditTx(ctx, tx, entry)
	})
}

// SetFileApprovals sets the approval rules the servers file gives, by
// server name, marking them as the file's. A server whose rules came from
// the file before and that the file no longer gives rules for keeps them,
// editable on its admin page again: a start never drops rules silently.
// It returns the names of those servers.
func (s *Store) SetFileApprovals(ctx context.Context, rules map[string]*approvals.Policy) ([]string, error) {
	s.forgetServers() // see ServerToCall
	var released []string
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		names := make([]string, 0, len(rules))
		for name, p := range rules {
			raw, err := policyJSON(p)
			if err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, `update servers set approvals = $2, approvals_from_file = true, updated_at = now()
				where name = $1`, name, raw)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return notFound("server " + name)
			}
			names = append(names, name)
		}
		rows, _ := tx.Query(ctx, `update servers set approvals_from_file = false, updated_at = now()
			where approvals_from_file and name <> all($1) returning name`, names)
		var err error
		released, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	return released, err
}
