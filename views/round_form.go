package views

import (
	"net/url"
	"strings"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// RoundForm builds the answer form of pending round r on server, without
// where it posts to, from its questions qs (read with round.Parse and
// round.WithRoots) and the choices posted, when re-rendering after a failed
// check (nil for a fresh form).
func RoundForm(r *store.Round, server string, qs []round.Question, actions []string) *RoundVM {
	vm := &RoundVM{
		Seq:       r.Seq,
		Status:    r.Status,
		ExpiresAt: r.ExpiresAt,
		Held:      r.HeldBy != nil,
		Questions: questionVMs(qs, server, actions),
		Errors:    errorLinks(qs),
	}
	singleQuestion(vm)
	return vm
}

// singleQuestion marks the only question a person answers in a round of
// one (roots are answered without them), unless it is a sampling request,
// which has a reply to write and no cancel.
func singleQuestion(vm *RoundVM) {
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
func questionVMs(qs []round.Question, server string, actions []string) []QuestionVM {
	chosen := round.Choices(qs, actions)
	out := make([]QuestionVM, len(qs))
	for i, q := range qs {
		out[i] = QuestionVM{
			Key: q.Key, Server: server, Message: q.Message, Kind: q.Kind,
			ActionName: round.ActionName(i), ActionID: round.ActionID(i), Action: chosen[i], Form: q.Form, Unsupported: q.Unsupported,
			URL: urlOf(q), Error: q.Error,
			Sampling: samplingOf(q.Sampling), Reply: q.Reply, ReplyName: round.ReplyName(i), ReplyID: round.ReplyID(i), ReplyError: q.ReplyError,
			Roots: rootVMs(q.Roots),
		}
	}
	return out
}

// urlOf is a URL-mode question's URL for the person to examine; nil for
// any other question.
func urlOf(q round.Question) *URLVM {
	if q.URL == "" {
		return nil
	}
	return urlVM(q.URL)
}

// rootVMs are the roots a roots/list question is answered with.
func rootVMs(roots []store.Root) []RootVM {
	var out []RootVM
	for _, r := range roots {
		out = append(out, RootVM{URI: r.URI, Name: r.Name})
	}
	return out
}

// errorLinks lists the forms' errors for the summary at the top.
func errorLinks(qs []round.Question) []ErrorLink {
	var links []ErrorLink
	for i, q := range qs {
		if q.Error != "" {
			links = append(links, ErrorLink{Href: "#" + round.ActionID(i), Message: questionLabel(q) + ": " + q.Error})
		}
		if q.ReplyError != "" {
			links = append(links, ErrorLink{Href: "#" + round.ReplyID(i), Message: "Your reply: " + q.ReplyError})
		}
		if q.Form == nil {
			continue
		}
		for _, msg := range q.Form.Errors {
			href := "#" + round.ActionID(i)
			if q.Form.Fallback {
				href = "#" + q.Form.JSONID()
			}
			links = append(links, ErrorLink{Href: href, Message: msg})
		}
		for _, f := range q.Form.Fields {
			if f.Error != "" {
				links = append(links, ErrorLink{Href: "#" + f.ID, Message: f.Label + ": " + f.Error})
			}
		}
	}
	return links
}

// questionLabel names a question in the error summary: its message, cut
// short, or its key.
func questionLabel(q round.Question) string {
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
func FormErrors(f *forms.Form) []ErrorLink {
	return errorLinks([]round.Question{{Form: f}})
}

// Unsent is what the person typed into the questions qs, posted as values,
// to show when it could not be sent, so that nothing they wrote is lost.
func Unsent(qs []round.Question, values url.Values) []UnsentVM {
	var out []UnsentVM
	for i := range qs {
		u := UnsentVM{Question: questionLabel(qs[i])}
		switch reply, content := round.Typed(qs, values, i); {
		case reply != "":
			u.Lines = []AnswerLine{{Label: "Your reply", Value: reply}}
		case content != nil:
			u.Lines = answerLines(qs[i].Form, content)
		}
		if len(u.Lines) > 0 {
			out = append(out, u)
		}
	}
	return out
}
