package handlers

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/mcp-rounds/rounds/engine"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// assigneeField is the tool form's field naming who answers; the tool's
// own arguments are under argsPrefix, so it cannot clash with them.
const assigneeField = "_assignee"

// assigneeChoices lists whom a call may be assigned to: every enabled
// person and every team.
func (h *Handler) assigneeChoices(ctx context.Context) ([]string, error) {
	users, err := h.store.Users(ctx)
	if err != nil {
		return nil, err
	}
	teams, err := h.store.Teams(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, u := range users {
		if !u.Disabled {
			out = append(out, u.Name)
		}
	}
	for _, t := range teams {
		out = append(out, store.TeamPrefix+t.Name)
	}
	return out, nil
}

// checkAssignee returns what is wrong with an assignee typed into a form,
// or "" when it names someone who may answer (or nobody: the caller).
func (h *Handler) checkAssignee(ctx context.Context, assignee string) string {
	if assignee == "" {
		return ""
	}
	var se *store.Error
	if err := h.store.CheckAssignee(ctx, assignee); errors.As(err, &se) {
		return se.Message
	} else if err != nil {
		return "Who answers could not be checked just now; please try again."
	}
	return ""
}

// reachVM is whom the call's rounds wait for and, for its owner and
// admins, the webhook events sent about it.
func (h *Handler) reachVM(ctx context.Context, call *store.Call) (views.ReachVM, error) {
	vm := views.ReachVM{Owner: call.Owner, ShowDeliveries: mayAccess(ctx, call.Owner)}
	if call.Assignee != nil {
		vm.Assignee = *call.Assignee
	}
	if !vm.ShowDeliveries || call.WebhookURL == nil {
		return vm, nil
	}
	deliveries, err := h.store.Deliveries(ctx, call.ID)
	if err != nil {
		return vm, err
	}
	vm.Deliveries = deliveryVMs(deliveries)
	return vm, nil
}

// agentReach says on the call's page, for a call an agent started, which
// agent, how it signed in, and whom its waiting round, if any, asks. A
// round only the owner may answer (a URL-mode question) offers no form to
// anyone else but admins.
func agentReach(ctx context.Context, page *views.CallVM, call *store.Call, rounds []store.Round) {
	a, vm := call.Agent, &page.Reach
	if a == nil {
		return
	}
	defer func() {
		if vm.OwnerAsked && !mayAccess(ctx, call.Owner) {
			page.Current = nil
		}
	}()
	vm.Agent = a.Label()
	switch {
	case call.AgentTokenName != nil:
		vm.AgentVia = "API token " + *call.AgentTokenName
	case a.OAuthClient != "":
		vm.AgentVia = "OAuth client " + cmp.Or(a.OAuthClientName, a.OAuthClient)
	}
	for i := range rounds {
		r := &rounds[i]
		if r.Seq != call.CurrentSeq || call.Status != store.CallInputRequired || r.Status != store.RoundPending {
			continue
		}
		vm.Waiting = true
		vm.AgentAsked = r.Asks != nil && *r.Asks == store.AsksAgent
		vm.OwnerAsked = r.Asks != nil && *r.Asks == store.AsksOwner
	}
}

func deliveryVMs(ds []store.Delivery) []views.DeliveryVM {
	var out []views.DeliveryVM
	for _, d := range ds {
		dv := views.DeliveryVM{ID: d.ID, Type: d.Type, URL: d.URL, Created: d.CreatedAt, Attempts: d.Attempts,
			LastAttempt: d.LastAttemptAt, Delivered: d.DeliveredAt}
		if d.LastStatus != nil {
			dv.LastStatus = *d.LastStatus
		}
		if d.LastError != nil {
			dv.LastError = *d.LastError
		}
		out = append(out, dv)
	}
	return out
}

// answeredBy names who answered a round, if a person did.
func answeredBy(r *store.Round) string {
	if r.AnsweredBy == nil {
		return ""
	}
	return *r.AnsweredBy
}

// notPendingMessage says why a round takes no answer, naming who answered
// it: with a team, the others learn who was first.
func notPendingMessage(r *store.Round) string {
	if r.Status == store.RoundAnswered && r.AnsweredBy != nil {
		return store.AlreadyAnsweredMessage(*r.AnsweredBy)
	}
	return "This round was already answered, or is no longer current."
}

func (h *Handler) accountMailVM(c echo.Context) (*views.AccountMailVM, error) {
	contact, err := h.store.Contact(c.Request().Context(), h.person(c))
	if err != nil {
		return nil, err
	}
	return &views.AccountMailVM{Email: contact.Email, Rounds: contact.EmailRounds, MailOn: h.settings.Mail}, nil
}

// accountMailUpdate saves the person's e-mail address and whether they
// want round mail.
func (h *Handler) accountMailUpdate(c echo.Context) error {
	ctx := c.Request().Context()
	email, rounds := c.FormValue("email"), c.FormValue("rounds") != ""
	err := h.store.SetContact(ctx, h.person(c), email, rounds)
	var se *store.Error
	if errors.As(err, &se) && errors.Is(err, store.ErrInvalid) {
		u := user(c)
		sessions, err := h.accountSessionsVM(c)
		if err != nil {
			return err
		}
		vm := views.AccountVM{Name: u.Name, IsAdmin: u.IsAdmin, Since: u.CreatedAt, Sessions: sessions,
			Mail: views.AccountMailVM{Email: email, Rounds: rounds, MailOn: h.settings.Mail, Error: se.Message}}
		return render(c, http.StatusUnprocessableEntity, views.AccountPage(vm))
	}
	if err != nil {
		return err
	}
	h.audit(c, "account.mail", h.person(c), map[string]any{"rounds": rounds, "address": email != ""})
	return c.Redirect(http.StatusSeeOther, "/account?done=mail")
}

// webhookSecretRotate makes the person a new webhook signing secret.
func (h *Handler) webhookSecretRotate(c echo.Context) error {
	if _, err := h.store.RotateWebhookSecret(c.Request().Context(), h.person(c)); err != nil {
		return err
	}
	h.audit(c, "webhook_secret.rotated", h.person(c), nil)
	return c.Redirect(http.StatusSeeOther, "/tokens")
}

type apiMeResponse struct {
	Name          string    `json:"name"`
	Admin         bool      `json:"admin"`
	Email         string    `json:"email"`
	EmailRounds   bool      `json:"email_rounds"`
	Teams         []string  `json:"teams"`
	WebhookSecret string    `json:"webhook_secret"`
	CreatedAt     time.Time `json:"createdAt"`
	// Away is until when they are away and who answers for them; null
	// when they are not.
	Away *apiAway `json:"away"`
}

// apiMe says who the token belongs to, with the secret their webhook
// events are signed with: GET /api/v1/me.
func (h *Handler) apiMe(c echo.Context) error {
	ctx := c.Request().Context()
	u := user(c)
	contact, err := h.store.Contact(ctx, u.Name)
	if err != nil {
		return err
	}
	teams, err := h.store.TeamsOf(ctx, u.Name)
	if err != nil {
		return err
	}
	secret, err := h.store.WebhookSecret(ctx, u.Name)
	if err != nil {
		return err
	}
	if teams == nil {
		teams = []string{}
	}
	away, err := h.store.AwayOf(ctx, u.Name)
	if err != nil {
		return err
	}
	me := apiMeResponse{
		Name: u.Name, Admin: u.IsAdmin, Email: contact.Email, EmailRounds: contact.EmailRounds, Teams: teams,
		WebhookSecret: engine.FormatWebhookSecret(secret), CreatedAt: u.CreatedAt,
	}
	if away != nil {
		me.Away = &apiAway{Until: &away.Until, Delegate: away.Delegate}
	}
	c.Response().Header().Set("Cache-Control", "no-store")
	return writeJSON(c, http.StatusOK, me)
}
