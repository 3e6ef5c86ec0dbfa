package handlers

import (
	"context"

	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// roundPlanVM says what happens to a waiting round nobody answers; nil for
// a question held on a session, whose deadline cancels it.
func (h *Handler) roundPlanVM(ctx context.Context, r *store.Round) (*views.RoundPlanVM, error) {
	if r.HeldBy != nil {
		return nil, nil
	}
	p, err := h.store.RoundPlan(ctx, r.CallID, r.Seq)
	if err != nil {
		return nil, err
	}
	vm := &views.RoundPlanVM{ExpiresAt: r.ExpiresAt, OnExpiry: p.OnExpiry, EscalateAt: p.EscalateAt,
		EscalatedAt: p.EscalatedAt, EscalateTo: deref(p.EscalateTo), EscalatedFrom: deref(p.EscalatedFrom)}
	if p.EscalatedAt == nil && (p.EscalateAt == nil || p.EscalateTo == nil) {
		vm.EscalateAt = nil
	}
	return vm, nil
}
