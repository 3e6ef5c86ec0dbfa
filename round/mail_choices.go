package round

import (
	"errors"
	"net/url"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/maillink"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// MailChoice is one answer a round's mail offers as a link: what it says,
// and the form it stands for, posted as the round's page would post it.
type MailChoice struct {
	Label  string
	Values url.Values
}

// MailChoices are the answers a round's mail may offer as links, one per
// choice: for a round of one form question with one property that is a
// yes/no (Yes, No) or a single choice (its options, by title), at most
// maillink.MaxChoices of them. Any other round is answered on its page:
// nil.
func MailChoices(qs []Question) []MailChoice {
	if len(qs) != 1 {
		return nil
	}
	q := qs[0]
	if q.Kind != mcpclient.KindForm || q.Unsupported != "" || q.Form == nil || q.Form.Fallback || len(q.Form.Fields) != 1 {
		return nil
	}
	fd := q.Form.Fields[0]
	accept := func(set map[string]string) url.Values {
		v := url.Values{ActionName(0): {ActionAccept}}
		for k, s := range set {
			v.Set(k, s)
		}
		return v
	}
	switch fd.Kind {
	case forms.KindCheckbox:
		return []MailChoice{
			{Label: "Yes", Values: accept(map[string]string{fd.InputName: "true", fd.PresentName(): "1"})},
			{Label: "No", Values: accept(map[string]string{fd.PresentName(): "1"})},
		}
	case forms.KindRadio, forms.KindSelect:
		if len(fd.Options) == 0 || len(fd.Options) > maillink.MaxChoices {
			return nil
		}
		out := make([]MailChoice, len(fd.Options))
		for i, o := range fd.Options {
			out[i] = MailChoice{Label: o.Label, Values: accept(map[string]string{fd.InputName: o.Value})}
		}
		return out
	}
	return nil
}

// MailQuestion is what the round's one question asks, and the label of
// its one field, for the page a mail's link opens: the server's text.
func MailQuestion(qs []Question) (message, field string) {
	if len(qs) == 0 {
		return "", ""
	}
	q := qs[0]
	if q.Form != nil && len(q.Form.Fields) == 1 {
		field = q.Form.Fields[0].Label
	}
	return q.Message, field
}

// ErrNoSuchChoice is a mail link's choice the round does not offer.
var ErrNoSuchChoice = errors.New("the round does not offer this choice")

// MailAnswer checks the answer choice i of round r's mail stands for, as
// FormAnswer checks the page's; ErrNotWaiting when the round takes no
// answer, ErrNoSuchChoice when it offers no such choice.
func MailAnswer(call *store.Call, r *store.Round, i int) (*Answer, error) {
	qs, err := waiting(call, r)
	if err != nil {
		return nil, err
	}
	choices := MailChoices(qs)
	if i < 0 || i >= len(choices) {
		return nil, ErrNoSuchChoice
	}
	return FormAnswer(call, r, choices[i].Values)
}
