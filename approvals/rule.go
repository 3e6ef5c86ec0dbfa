// Package approvals decides which tool calls wait for a person's go-ahead:
// the rules an admin sets per server, in the servers file's JSON form, with
// their CEL conditions compiled once.
package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Rule is one approval rule as the servers file and the admin page write it:
// {"tools": ["transfer"] | "destructive", "when": "<CEL>",
// "ask": "team:finance" | "ada" | ["ada", "team:ops"], "needs": 2 | "all"}.
type Rule struct {
	// Tools are the tool names the rule covers; empty when Destructive.
	Tools []string
	// Destructive covers every tool the spec's defaults call destructive.
	Destructive bool
	// When is an optional CEL condition over args and caller.
	When string
	// Ask names who decides: people and "team:NAME" entries.
	Ask []string
	// Needs is how many of them must approve (1 by default); 0 when All.
	Needs int
	// All means every one of the people asked must approve.
	All bool
}

// TeamPrefix marks an Ask entry naming a team rather than a person.
const TeamPrefix = "team:"

// MaxWhen is the longest condition accepted, in characters.
const MaxWhen = 2000

var (
	personName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)
	teamName   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)
	toolName   = regexp.MustCompile(`^[A-Za-z0-9_./-]{1,128}$`)
)

// Team reports the team an Ask entry names, if it names one.
func Team(ask string) (string, bool) {
	return strings.CutPrefix(ask, TeamPrefix)
}

// People returns the person names among the rule's Ask entries.
func (r Rule) People() []string {
	var out []string
	for _, a := range r.Ask {
		if _, ok := Team(a); !ok {
			out = append(out, a)
		}
	}
	return out
}

// Teams returns the team names among the rule's Ask entries.
func (r Rule) Teams() []string {
	var out []string
	for _, a := range r.Ask {
		if t, ok := Team(a); ok {
			out = append(out, t)
		}
	}
	return out
}

// ruleJSON is the file form, each field kept raw to accept its two shapes.
type ruleJSON struct {
	Tools json.RawMessage `json:"tools"`
	When  string          `json:"when,omitempty"`
	Ask   json.RawMessage `json:"ask"`
	Needs json.RawMessage `json:"needs,omitempty"`
}

// UnmarshalJSON reads the file form, refusing unknown keys and shapes with a
// sentence an operator can act on.
func (r *Rule) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var j ruleJSON
	if err := dec.Decode(&j); err != nil {
		if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return fmt.Errorf("unknown key %s (a rule has tools, when, ask and needs)", key)
		}
		return errors.New("a rule is a JSON object with tools, when, ask and needs")
	}
	var out Rule
	var err error
	if out.Tools, out.Destructive, err = parseTools(j.Tools); err != nil {
		return err
	}
	if out.Ask, err = parseAsk(j.Ask); err != nil {
		return err
	}
	if out.Needs, out.All, err = parseNeeds(j.Needs); err != nil {
		return err
	}
	out.When = strings.TrimSpace(j.When)
	*r = out
	return nil
}

func parseTools(raw json.RawMessage) ([]string, bool, error) {
	const want = `"tools" must be a list of tool names or "destructive"`
	if len(raw) == 0 || string(raw) == "null" {
		return nil, false, errors.New(want)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "destructive" {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("%s, not %q", want, s)
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return nil, false, errors.New(want)
	}
	for _, t := range list {
		if !toolName.MatchString(t) {
			return nil, false, fmt.Errorf("%q is not a tool name", t)
		}
	}
	return list, false, nil
}

func parseAsk(raw json.RawMessage) ([]string, error) {
	const want = `"ask" must name a person, "team:NAME", or a list of them`
	var list []string
	var s string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, errors.New(want)
	case json.Unmarshal(raw, &s) == nil:
		list = []string{s}
	case json.Unmarshal(raw, &list) != nil:
		return nil, errors.New(want)
	}
	if len(list) == 0 {
		return nil, errors.New(want)
	}
	seen := map[string]bool{}
	for _, a := range list {
		if err := checkAsk(a); err != nil {
			return nil, err
		}
		if seen[a] {
			return nil, fmt.Errorf("%q is asked twice", a)
		}
		seen[a] = true
	}
	return list, nil
}

func checkAsk(a string) error {
	if t, ok := Team(a); ok {
		if !teamName.MatchString(t) {
			return fmt.Errorf("%q is not a team: after \"team:\" comes a team name (letters, digits, . _ -)", a)
		}
		return nil
	}
	if !personName.MatchString(a) {
		return fmt.Errorf("%q is neither a person's name nor \"team:NAME\"", a)
	}
	return nil
}

func parseNeeds(raw json.RawMessage) (int, bool, error) {
	const want = `"needs" must be a whole number of 1 or more, or "all"`
	if len(raw) == 0 || string(raw) == "null" {
		return 1, false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s == "all" {
			return 0, true, nil
		}
		return 0, false, fmt.Errorf("%s, not %q", want, s)
	}
	var n int
	if json.Unmarshal(raw, &n) != nil || n < 1 {
		return 0, false, fmt.Errorf("%s, not %s", want, raw)
	}
	return n, false, nil
}

// MarshalJSON writes the file form back: "destructive" or a list for tools,
// a string for a single ask, needs left out when it is 1.
func (r Rule) MarshalJSON() ([]byte, error) {
	out := struct {
		Tools any    `json:"tools"`
		When  string `json:"when,omitempty"`
		Ask   any    `json:"ask"`
		Needs any    `json:"needs,omitempty"`
	}{When: r.When}
	out.Tools = r.Tools
	if r.Destructive {
		out.Tools = "destructive"
	}
	out.Ask = r.Ask
	if len(r.Ask) == 1 {
		out.Ask = r.Ask[0]
	}
	switch {
	case r.All:
		out.Needs = "all"
	case r.Needs > 1:
		out.Needs = r.Needs
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "when" reads as typed: args.amount > 1000
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Asks describes whom the rule asks, for people: "2 of team:finance, ada".
func (r Rule) Asks() string {
	who := strings.Join(r.Ask, ", ")
	switch {
	case r.All:
		return "all of " + who
	case r.Needs > 1:
		return fmt.Sprintf("%d of %s", r.Needs, who)
	case len(r.Ask) == 1 && len(r.Teams()) == 0:
		return who
	}
	return "one of " + who
}
