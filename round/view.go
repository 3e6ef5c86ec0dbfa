package round

import (
	"net/url"
	"strings"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// Form builds the answer form of pending round r of call, without where it
// posts to. qs and actions carry what the person posted, when re-rendering
// after a failed check; nil qs reads the round afresh.
func Form(call *store.Call, r *store.Round, qs []Question, actions []string) (*views.RoundVM, error) {
	if qs == nil {
		var err error
		if qs, err = Parse(r); err != nil {
			return nil, err
		}
	}
	withRoots(qs, call)
	vm := &views.RoundVM{
		Seq:       r.Seq,
		Status:    r.Status,
		ExpiresAt: r.ExpiresAt,
		Held:      r.HeldBy != nil,
		Questions: questionVMs(qs, call.ServerName, actions),
		Errors:    errorLinks(qs),
	}
	singleQuestion(vm)
	return vm, nil
}

// singleQuestion marks the only question a person answers in a round of
// one (roots are answered without them), unless it is a sampling request,
// which has a reply to write and no cancel.
func singleQuestion(vm *views.RoundVM) {
	only := -1
	for i, q := range vm.Questions {
		if q.Kind == mcpclient.KindRoots {
			continue
		}
		if only >= 0 {
			return
		}
		only = i
	}
	if only < 0 || vm.Questions[only].Sampling != nil {
		return
	}
	vm.Questions[only].Single = true
	vm.Single = &vm.Questions[only]
}

// questionVMs builds the questions' view models for the answer form.
func questionVMs(qs []Question, server string, actions []string) []views.QuestionVM {
	out := make([]views.QuestionVM, len(qs))
	for i, q := range qs {
		action := actionAccept
		switch {
		case actions != nil:
			action = actions[i]
		case q.Unsupported != "" || q.URL != nil:
			// Consent to open a page is never given on the person's behalf.
			action = ""
		}
		out[i] = views.QuestionVM{
			Key: q.Key, Server: server, Message: q.Message, Kind: q.Kind,
			ActionName: actionName(i), ActionID: ActionID(i), Action: action, Form: q.Form, Unsupported: q.Unsupported,
			URL: q.URL, Error: q.Error,
			Sampling: q.Sampling, Reply: q.Reply, ReplyName: replyName(i), ReplyID: replyID(i), ReplyError: q.ReplyError,
			Roots: q.Roots,
		}
	}
	return out
}

// errorLinks lists the forms' errors for the summary at the top.
func errorLinks(qs []Question) []views.ErrorLink {
	var links []views.ErrorLink
	for i, q := range qs {
		if q.Error != "" {
			links = append(links, views.ErrorLink{Href: "#" + ActionID(i), Message: questionLabel(q) + ": " + q.Error})
		}
		if q.ReplyError != "" {
			links = append(links, views.ErrorLink{Href: "#" + replyID(i), Message: "Your reply: " + q.ReplyError})
		}
		if q.Form == nil {
			continue
		}
		for _, msg := range q.Form.Errors {
			href := "#" + ActionID(i)
			if q.Form.Fallback {
				href = "#" + q.Form.JSONID()
			}
			links = append(links, views.ErrorLink{Href: href, Message: msg})
		}
		for _, f := range q.Form.Fields {
			if f.Error != "" {
				links = append(links, views.ErrorLink{Href: "#" + f.ID, Message: f.Label + ": " + f.Error})
			}
		}
	}
	return links
}

// questionLabel names a question in the error summary: its message, cut
// short, or its key.
func questionLabel(q Question) string {
	label := strings.TrimRight(strings.TrimSpace(q.Message), ".:?! ")
	if label == "" {
		label = q.Key
	}
	if r := []rune(label); len(r) > 60 {
		label = strings.TrimSpace(string(r[:59])) + "…"
	}
	return label
}

// FormErrors lists the errors of a form that is not a round's (a tool's,
// a prompt's), for the summary at the top.
func FormErrors(f *forms.Form) []views.ErrorLink {
	return errorLinks([]Question{{Form: f}})
}

// Unsent is what the person typed into the questions qs, posted as values,
// to show when it could not be sent, so that nothing they wrote is lost.
func Unsent(qs []Question, values url.Values) []views.UnsentVM {
	var out []views.UnsentVM
	for i := range qs {
		q := &qs[i]
		u := views.UnsentVM{Question: questionLabel(*q)}
		switch {
		case q.Sampling != nil:
			if reply := postedReply(values, i); reply != "" {
				u.Lines = []views.AnswerLine{{Label: "Your reply", Value: reply}}
			}
		case q.Form != nil && values.Get(actionName(i)) != actionDecline && values.Get(actionName(i)) != actionCancel:
			if content, _ := q.Form.Decode(values); len(content) > 0 {
				if raw, err := mcpclient.MarshalRaw(content); err == nil {
					u.Lines = answerLines(q.Form, raw)
				}
			}
		}
		if len(u.Lines) > 0 {
			out = append(out, u)
		}
	}
	return out
}
