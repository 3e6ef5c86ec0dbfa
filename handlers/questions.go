package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"

	"github.com/mcp-rounds/rounds/forms"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
	"github.com/mcp-rounds/rounds/views"
)

// Answer actions, as the spec names them.
const (
	actionAccept  = "accept"
	actionDecline = "decline"
	actionCancel  = "cancel"
)

// question is one input request of a stored round, ready to render or to
// check answers against.
type question struct {
	mcpclient.Question
	Message string
	Schema  json.RawMessage
	Form    *forms.Form
	// URL is the page a URL-mode question asks the person to open.
	URL *views.URLVM
	// Unsupported says why this question cannot be answered here.
	Unsupported string
	// Error says what is wrong with the posted choice of answer.
	Error string
	// Sampling is a sampling request to write the reply to; Reply is what
	// was typed, ReplyError what is wrong with it.
	Sampling   *views.SamplingVM
	Reply      string
	ReplyError string
	// Roots and Auto are a roots/list question's answer, from the server's
	// settings: to show, and to send (see withRoots).
	Roots []views.RootVM
	Auto  json.RawMessage
}

type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	URL             string          `json:"url"`
}

// questionsOf reads a round's questions and builds a form for each, with
// posted names prefixed by the question's position (q0., q1., …), never by
// the server's keys.
func questionsOf(r *store.Round) ([]question, error) {
	qs, err := mcpclient.ParseQuestions(r.InputRequests)
	if err != nil {
		return nil, err
	}
	out := make([]question, len(qs))
	for i, q := range qs {
		out[i] = question{Question: q}
		var p elicitParams
		if q.Params != nil {
			_ = json.Unmarshal(q.Params, &p)
		}
		out[i].Message = p.Message
		if q.Kind == mcpclient.KindURL {
			if p.URL == "" {
				out[i].Unsupported = "The server asks you to open a page but sent no address. You can decline or cancel it."
				continue
			}
			out[i].URL = urlVM(p.URL)
			continue
		}
		switch q.Kind {
		case mcpclient.KindSampling:
			vm, summary, ok := samplingVM(q.Params)
			out[i].Sampling, out[i].Message = vm, summary
			if !ok {
				out[i].Message = kindSummary(q)
				out[i].Unsupported = "The server sent a sampling request that cannot be read. You can decline it."
			}
			continue
		case mcpclient.KindRoots:
			out[i].Message = kindSummary(q)
			continue
		}
		if q.Kind != mcpclient.KindForm {
			out[i].Unsupported = "This kind of question cannot be answered here. You can decline or cancel it."
			continue
		}
		out[i].Schema = p.RequestedSchema
		form, err := forms.New(p.RequestedSchema, fmt.Sprintf("q%d.", i))
		if err != nil {
			out[i].Unsupported = "The server sent a form that cannot be shown (" + err.Error() + "). You can decline or cancel it."
			continue
		}
		form.LabelLoneValue(p.Message)
		out[i].Form = form
	}
	return out, nil
}

func actionName(i int) string { return fmt.Sprintf("q%d$action", i) }
func actionID(i int) string   { return fmt.Sprintf("q%d-actions", i) }

// decodeAnswers turns a posted round form into inputResponses. It reports
// field errors on the questions' forms and returns ok=false when any.
func decodeAnswers(qs []question, values url.Values) (json.RawMessage, []string, bool) {
	responses := map[string]any{}
	actions := make([]string, len(qs))
	ok := true
	for i := range qs {
		q := &qs[i]
		action := values.Get(actionName(i))
		actions[i] = action
		switch q.Kind {
		case mcpclient.KindRoots:
			// Answered from the server's settings, never by the person.
			responses[q.Key] = q.Auto
			continue
		case mcpclient.KindSampling:
			q.Reply = postedReply(values, i)
			switch {
			case action == actionDecline || action == actionCancel:
				responses[q.Key] = map[string]any{"action": actionDecline}
			case action != actionAccept || q.Unsupported != "":
				ok = false
				q.Error = "Choose whether to send your reply or decline."
			case strings.TrimSpace(q.Reply) == "":
				ok = false
				q.ReplyError = replyRequired
			default:
				responses[q.Key] = samplingReply(q.Reply)
			}
			continue
		}
		switch {
		case action == actionDecline || action == actionCancel:
			responses[q.Key] = map[string]any{"action": action}
			if q.Form != nil {
				q.Form.Decode(values) // keep what was typed, should they change their mind
				clearErrors(q.Form)
			}
		case action != actionAccept:
			ok = false
			q.Error = chooseMessage(q)
			if q.Form != nil {
				q.Form.Decode(values)
				clearErrors(q.Form)
			}
		case q.Unsupported != "":
			ok = false
			q.Error = chooseMessage(q)
		case q.Kind == mcpclient.KindURL:
			// Accepting a URL-mode question carries no content: what the
			// person did on the page never passes through here.
			responses[q.Key] = map[string]any{"action": actionAccept}
		default:
			content, good := q.Form.Decode(values)
			if !good {
				ok = false
				continue
			}
			encoded, err := q.Form.Encode(content)
			if err != nil {
				ok = false
				q.Error = "Your answers could not be read."
				continue
			}
			responses[q.Key] = map[string]any{"action": actionAccept, "content": encoded}
		}
	}
	if !ok {
		return nil, actions, false
	}
	raw, err := inOrder(qs, responses)
	if err != nil {
		return nil, actions, false
	}
	return raw, actions, true
}

// inOrder writes the responses as a JSON object in the order of the
// round's questions, which is the server's.
func inOrder(qs []question, responses map[string]any) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for _, q := range qs {
		v, ok := responses[q.Key]
		if !ok {
			continue
		}
		key, err := mcpclient.MarshalRaw(q.Key)
		if err != nil {
			return nil, err
		}
		val, err := mcpclient.MarshalRaw(v)
		if err != nil {
			return nil, err
		}
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(val)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// chooseMessage asks the person to pick one of the question's answers.
func chooseMessage(q *question) string {
	switch {
	case q.Unsupported != "":
		return "Choose Decline or Cancel: this question cannot be answered here."
	case q.URL != nil:
		return "Choose “I've finished”, Decline or Cancel."
	}
	return "Choose whether to send these answers, decline or cancel."
}

func clearErrors(f *forms.Form) {
	for i := range f.Fields {
		f.Fields[i].Error = ""
	}
	f.Errors = nil
}

// apiAnswer is one entry of an API inputResponses object.
type apiAnswer struct {
	Action  string          `json:"action"`
	Content json.RawMessage `json:"content"`
}

// checkAPIAnswers checks an API inputResponses object against the round's
// questions with the same rules as the form. It returns field errors by
// question key ("" for the whole object).
func checkAPIAnswers(qs []question, raw json.RawMessage) map[string]map[string]string {
	errs := map[string]map[string]string{}
	add := func(key, field, msg string) {
		if errs[key] == nil {
			errs[key] = map[string]string{}
		}
		errs[key][field] = msg
	}
	var given map[string]json.RawMessage
	if err := json.Unmarshal(raw, &given); err != nil || given == nil {
		add("", "", "inputResponses must be an object keyed by input request")
		return errs
	}
	known := map[string]bool{}
	for _, q := range qs {
		known[q.Key] = true
		answer, present := given[q.Key]
		if q.Kind == mcpclient.KindRoots {
			if present {
				add(q.Key, "", rootsGiven)
			}
			continue
		}
		if !present {
			add(q.Key, "", "Answer this question (accept, decline or cancel).")
			continue
		}
		if q.Kind == mcpclient.KindSampling {
			for field, msg := range checkSamplingAnswer(answer) {
				add(q.Key, field, msg)
			}
			continue
		}
		var a apiAnswer
		if err := json.Unmarshal(answer, &a); err != nil {
			add(q.Key, "", "An answer must be an object with an action.")
			continue
		}
		switch a.Action {
		case actionDecline, actionCancel:
			continue
		case actionAccept:
		default:
			add(q.Key, "", `action must be "accept", "decline" or "cancel".`)
			continue
		}
		if q.Unsupported != "" {
			add(q.Key, "", q.Unsupported)
			continue
		}
		if q.Kind == mcpclient.KindURL {
			if len(a.Content) > 0 && string(a.Content) != "null" {
				add(q.Key, "", `A URL-mode question is accepted without content: send {"action": "accept"}.`)
			}
			continue
		}
		var content any = map[string]any{}
		if len(a.Content) > 0 {
			dec := json.NewDecoder(bytes.NewReader(a.Content))
			dec.UseNumber()
			if err := dec.Decode(&content); err != nil {
				add(q.Key, "", "content must be a JSON object.")
				continue
			}
		}
		if _, isObject := content.(map[string]any); !isObject {
			add(q.Key, "", "content must be a JSON object.")
			continue
		}
		fieldErrs, err := forms.Validate(q.Schema, content)
		if err != nil {
			add(q.Key, "", "The server's form cannot be checked: "+err.Error())
			continue
		}
		for field, msg := range fieldErrs {
			add(q.Key, field, msg)
		}
	}
	for key := range given {
		if !known[key] {
			add(key, "", "This round has no such question.")
		}
	}
	return errs
}

// questionVMs builds the questions' view models for the answer form.
func questionVMs(qs []question, server string, actions []string) []views.QuestionVM {
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
			ActionName: actionName(i), ActionID: actionID(i), Action: action, Form: q.Form, Unsupported: q.Unsupported,
			URL: q.URL, Error: q.Error,
			Sampling: q.Sampling, Reply: q.Reply, ReplyName: replyName(i), ReplyID: replyID(i), ReplyError: q.ReplyError,
			Roots: q.Roots,
		}
	}
	return out
}

// errorLinks lists the forms' errors for the summary at the top.
func errorLinks(qs []question) []views.ErrorLink {
	var links []views.ErrorLink
	for i, q := range qs {
		if q.Error != "" {
			links = append(links, views.ErrorLink{Href: "#" + actionID(i), Message: questionLabel(q) + ": " + q.Error})
		}
		if q.ReplyError != "" {
			links = append(links, views.ErrorLink{Href: "#" + replyID(i), Message: "Your reply: " + q.ReplyError})
		}
		if q.Form == nil {
			continue
		}
		for _, msg := range q.Form.Errors {
			href := "#" + actionID(i)
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
func questionLabel(q question) string {
	label := strings.TrimRight(strings.TrimSpace(q.Message), ".:?! ")
	if label == "" {
		label = q.Key
	}
	if r := []rune(label); len(r) > 60 {
		label = strings.TrimSpace(string(r[:59])) + "…"
	}
	return label
}

// answeredVMs describes a past round's answers, question by question.
func answeredVMs(r *store.Round, server, zone string) []views.QuestionVM {
	qs, err := questionsOf(r)
	if err != nil {
		return []views.QuestionVM{{Message: "The questions of this round could not be read."}}
	}
	inZone(qs, zone)
	var given map[string]apiAnswer
	_ = json.Unmarshal(r.Responses, &given)
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(r.Responses, &raw)
	// A declined sampling request ended the call: the round's other answers
	// were never sent.
	unsent := r.Status == store.RoundAnswered && r.HeldBy == nil && refused(qs, r.Responses)
	out := make([]views.QuestionVM, len(qs))
	for i, q := range qs {
		vm := views.QuestionVM{Key: q.Key, Server: server, Message: q.Message, Kind: q.Kind}
		if vm.Message == "" {
			vm.Message = q.Key
		}
		a, ok := given[q.Key]
		switch {
		case r.Status != store.RoundAnswered:
			vm.Answer = "Not answered."
		case !ok:
			vm.Answer = "No answer."
		case q.Kind == mcpclient.KindSampling:
			vm.Answer, vm.AnswerJSON = answeredSampling(raw[q.Key])
		case q.Kind == mcpclient.KindRoots:
			vm.Answer, vm.AnswerJSON = answeredRoots(raw[q.Key])
		case a.Action == actionAccept && q.Kind == mcpclient.KindURL:
			vm.Answer = "Finished on the page."
		case a.Action == actionAccept && unsent:
			vm.Answer = "Given, but not sent, as the sampling request was declined:"
			vm.AnswerJSON = prettyJSON(a.Content)
		case a.Action == actionAccept:
			vm.Answer = "Sent:"
			if vm.AnswerLines = answerLines(q.Form, a.Content); vm.AnswerLines == nil {
				vm.AnswerJSON = prettyJSON(a.Content)
			}
		case a.Action == actionDecline:
			vm.Answer = "Declined."
		case a.Action == actionCancel:
			vm.Answer = "Cancelled."
		}
		out[i] = vm
	}
	return out
}

// questionSummaries is a short text per question, for the inbox.
// It reads only the messages: building the forms would compile every schema.
func questionSummaries(raw json.RawMessage) []string {
	qs, err := mcpclient.ParseQuestions(raw)
	if err != nil {
		return []string{"(questions that cannot be read)"}
	}
	var out []string
	for _, q := range qs {
		var p struct {
			Message string `json:"message"`
		}
		if q.Params != nil {
			_ = json.Unmarshal(q.Params, &p)
		}
		if p.Message == "" {
			p.Message = kindSummary(q)
		}
		if len(out) == listQuestions {
			out = append(out, fmt.Sprintf("and %d more questions", len(qs)-listQuestions))
			break
		}
		if p.Message != "" {
			out = append(out, preview(p.Message, previewText))
		} else {
			out = append(out, preview(q.Key, previewName))
		}
	}
	return out
}

func prettyJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return string(raw)
	}
	return buf.String()
}

// fieldErrorText flattens API field errors into one sentence.
func fieldErrorText(errs map[string]map[string]string) string {
	var parts []string
	for key, fields := range errs {
		for field, msg := range fields {
			where := key
			if field != "" {
				where += "." + field
			}
			parts = append(parts, strings.TrimPrefix(where+": "+msg, ": "))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// urlVM prepares a URL-mode question's URL for the person to examine before
// they open it, as the spec asks of clients: the full URL with its host set
// apart, a link only for http and https, and a warning for each thing that
// makes a URL misleading. Nothing here fetches the URL.
func urlVM(raw string) *views.URLVM {
	vm := &views.URLVM{Full: raw, Before: raw}
	warn := func(kind, format string, args ...any) {
		vm.Warnings = append(vm.Warnings, views.URLWarning{Kind: kind, Text: fmt.Sprintf(format, args...)})
	}
	linkable := true
	if strings.ContainsFunc(raw, func(r rune) bool {
		return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError
	}) {
		warn("hidden", "The address contains spaces, backslashes or invisible characters, which browsers may read differently from how it looks here. It cannot be opened from here.")
		linkable = false
	}
	u, err := url.Parse(raw)
	if err != nil {
		warn("invalid", "This is not a valid address, so it cannot be opened from here.")
		return vm
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		if scheme == "" {
			warn("scheme", "This is not a web address: it does not start with http:// or https://. It is shown as text and cannot be opened from here.")
		} else {
			warn("scheme", "This is not a web address: it starts with “%s:”, not http:// or https://. It is shown as text and cannot be opened from here.", scheme)
		}
		linkable = false
	}
	host, start, ok := hostIn(raw, u)
	if !ok {
		if scheme == "http" || scheme == "https" {
			warn("invalid", "This address does not name a site, so it cannot be opened from here.")
		}
		return vm
	}
	vm.Before, vm.Host, vm.After = raw[:start], host, raw[start+len(host):]
	name := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if u.User != nil {
		warn("userinfo", "The address carries a user name or password (the part before “@”). The site it opens is %s, whatever that part says.", host)
	}
	if scheme == "http" {
		warn("http", "The address uses http, not https: the page is not encrypted, and others on the network could read or change it.")
	}
	if addr, err := netip.ParseAddr(name); err == nil {
		warn("ip", "The site is a bare IP address (%s), not a name, so nothing tells you who runs it.", addr)
	} else if numericHost(name) {
		warn("ip", "The site is written as a number (%s), which browsers read as an IP address.", host)
	}
	if p := u.Port(); p != "" && p != "80" && p != "443" {
		warn("port", "The address uses an unusual port (%s).", p)
	}
	if strings.Contains(host, "%") {
		warn("hidden", "The site's name is percent-encoded (%s), which hides what it says. It cannot be opened from here.", host)
		linkable = false
	}
	ascii := name
	if strings.ContainsFunc(name, func(r rune) bool { return r > unicode.MaxASCII }) {
		if a, err := idna.Lookup.ToASCII(name); err == nil {
			ascii = a
			warn("unicode", "The site's name has letters outside plain ASCII (%s), which can look like familiar letters but lead elsewhere. Browsers open it as %s.", scripts(name), a)
		} else {
			warn("unicode", "The site's name has letters outside plain ASCII (%s) that do not form a valid name. It cannot be opened from here.", scripts(name))
			linkable = false
		}
	} else if strings.HasPrefix(name, "xn--") || strings.Contains(name, ".xn--") {
		if uni, err := idna.Lookup.ToUnicode(name); err == nil && uni != name {
			warn("punycode", "The site's name is written in punycode (xn--…): it stands for “%s” (%s), which can imitate a familiar name.", uni, scripts(uni))
		} else {
			warn("punycode", "The site's name is written in punycode (xn--…) that does not decode to a valid name.")
		}
	}
	if d, err := publicsuffix.EffectiveTLDPlusOne(ascii); err == nil && d != ascii {
		vm.Domain = d
	}
	if linkable {
		vm.Href = raw
	}
	return vm
}

// hostIn finds the host of u in raw as written, so that the page can set it
// apart without re-encoding the URL. ok is false when raw has no host, or
// when where it sits is not plain to see.
func hostIn(raw string, u *url.URL) (host string, start int, ok bool) {
	if u.Host == "" || u.Opaque != "" {
		return "", 0, false
	}
	i := len(u.Scheme) + len("://")
	if len(raw) < i || !strings.EqualFold(raw[:i], u.Scheme+"://") {
		return "", 0, false
	}
	authority := raw[i:]
	if end := strings.IndexAny(authority, "/?#"); end >= 0 {
		authority = authority[:end]
	}
	start = i
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		start += at + 1
		authority = authority[at+1:]
	}
	host = authority
	if strings.HasPrefix(host, "[") {
		if end := strings.Index(host, "]"); end >= 0 {
			host = host[:end+1]
		}
	} else if colon := strings.LastIndex(host, ":"); colon >= 0 {
		host = host[:colon]
	}
	if host == "" {
		return "", 0, false
	}
	return host, start, true
}

// numericHost reports whether a host name would be read by browsers as an
// IPv4 address written oddly: its last label a decimal, octal or hex number.
func numericHost(name string) bool {
	labels := strings.Split(name, ".")
	last := labels[len(labels)-1]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// scripts names the writing systems of the letters in s, such as
// "Cyrillic and Latin letters".
func scripts(s string) string {
	seen := map[string]bool{}
	for _, r := range s {
		if !unicode.IsLetter(r) {
			continue
		}
		for name, table := range unicode.Scripts {
			if unicode.Is(table, r) {
				seen[name] = true
				break
			}
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	switch len(names) {
	case 0:
		return "no letters"
	case 1:
		return names[0] + " letters"
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1] + " letters"
}
