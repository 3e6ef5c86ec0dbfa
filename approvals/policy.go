package approvals

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
)

// Caller is who started a call, as a rule's condition sees it.
type Caller struct {
	// Name is the person whose token or session started the call.
	Name string `cel:"name"`
	// Teams are the teams that person belongs to.
	Teams []string `cel:"teams"`
	// Agent is the agent's clientInfo name, "" when no agent started it.
	Agent string `cel:"agent"`
}

// Annotations are the hints of a tool the spec's defaults read.
type Annotations struct {
	ReadOnlyHint    *bool
	DestructiveHint *bool
}

// Call is a tool call about to be sent, as the rules see it.
type Call struct {
	Tool        string
	Annotations *Annotations
	Args        map[string]any
	Caller      Caller
}

// Destructive reports what the spec's defaults say of a tool with these
// annotations: destructive unless it says readOnlyHint true or
// destructiveHint false. A tool with no annotations is destructive.
func (a *Annotations) Destructive() bool {
	if a == nil {
		return true
	}
	if a.ReadOnlyHint != nil && *a.ReadOnlyHint {
		return false
	}
	return a.DestructiveHint == nil || *a.DestructiveHint
}

// costLimit bounds one condition's evaluation; a plain comparison costs a
// handful, a comprehension over a large list runs out.
const costLimit = 100_000

// Policy is a server's rules, their conditions compiled once.
type Policy struct {
	rules    []Rule
	programs []cel.Program // nil where a rule has no condition
}

var env = mustEnv()

func mustEnv() *cel.Env {
	e, err := cel.NewEnv(
		ext.NativeTypes(ext.ParseStructTags(true), reflect.TypeFor[Caller]()),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("caller", cel.ObjectType("approvals.Caller")),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxWhen),
		ext.Strings(),
	)
	if err != nil {
		panic(err)
	}
	return e
}

// RuleError is what is wrong with one rule, by its place from 1.
type RuleError struct {
	Rule int
	Err  error
}

func (e *RuleError) Error() string { return fmt.Sprintf("rule %d: %s", e.Rule, e.Err) }
func (e *RuleError) Unwrap() error { return e.Err }

// Parse reads the rules in the file's JSON form and compiles their
// conditions. Nil, empty or null gives an empty policy. An error names the
// rule ("rule 2") and the reason.
func Parse(raw json.RawMessage) (*Policy, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return &Policy{}, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("want a JSON list of rules: [{\"tools\": …, \"ask\": …}, …]")
	}
	p := &Policy{rules: make([]Rule, len(items)), programs: make([]cel.Program, len(items))}
	for i, item := range items {
		if err := json.Unmarshal(item, &p.rules[i]); err != nil {
			return nil, &RuleError{Rule: i + 1, Err: err}
		}
		prg, err := compile(p.rules[i].When)
		if err != nil {
			return nil, &RuleError{Rule: i + 1, Err: err}
		}
		p.programs[i] = prg
	}
	return p, nil
}

// MustParse is Parse for rules known to be good, as in tests.
func MustParse(raw string) *Policy {
	p, err := Parse(json.RawMessage(raw))
	if err != nil {
		panic(err)
	}
	return p
}

func compile(when string) (cel.Program, error) {
	if when == "" {
		return nil, nil
	}
	if n := len([]rune(when)); n > MaxWhen {
		return nil, fmt.Errorf(`"when" is %d characters long; at most %d`, n, MaxWhen)
	}
	ast, iss := env.Compile(when)
	if iss.Err() != nil {
		return nil, fmt.Errorf(`"when" is not valid CEL: %s`, iss.Err())
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf(`"when" must be true or false, but gives %s (compare it: args.flag == true)`,
			ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit))
	if err != nil {
		return nil, fmt.Errorf(`"when" cannot run: %w`, err)
	}
	return prg, nil
}

// Rules returns the rules in order.
func (p *Policy) Rules() []Rule {
	if p == nil {
		return nil
	}
	return slices.Clone(p.rules)
}

// Empty reports whether the policy has no rules.
func (p *Policy) Empty() bool { return p == nil || len(p.rules) == 0 }

// MarshalJSON writes the rules in the file's form; an empty policy is null.
func (p *Policy) MarshalJSON() ([]byte, error) {
	if p.Empty() {
		return []byte("null"), nil
	}
	return json.Marshal(p.rules)
}

// Text writes the rules in the file's form for people to read and edit:
// one rule a line, nothing escaped that need not be; "" when empty.
func (p *Policy) Text() string {
	if p.Empty() {
		return ""
	}
	var b strings.Builder
	b.WriteString("[\n")
	for i, r := range p.rules {
		var line bytes.Buffer
		enc := json.NewEncoder(&line)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(r) // a Rule always encodes
		b.WriteString("  ")
		b.WriteString(strings.TrimSuffix(line.String(), "\n"))
		if i < len(p.rules)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("]")
	return b.String()
}

// Match returns the first rule that covers c's tool and whose condition
// holds, with its 0-based index; nil and -1 when none does.
//
// A condition that cannot be evaluated for this call (a missing argument,
// a type mismatch, the cost limit) counts as holding: asking a person is
// the safe side, letting a risky call through is not. The error is
// returned alongside the rule so that the caller can show or log why.
func (p *Policy) Match(c Call) (*Rule, int, error) {
	if p == nil {
		return nil, -1, nil
	}
	for i := range p.rules {
		r := &p.rules[i]
		if !r.covers(c) {
			continue
		}
		holds, err := p.holds(i, c)
		if err != nil {
			return r, i, fmt.Errorf("rule %d: %q could not be evaluated, so the rule applies: %w", i+1, r.When, err)
		}
		if holds {
			return r, i, nil
		}
	}
	return nil, -1, nil
}

func (r *Rule) covers(c Call) bool {
	if r.Destructive {
		return c.Annotations.Destructive()
	}
	return slices.Contains(r.Tools, c.Tool)
}

func (p *Policy) holds(i int, c Call) (bool, error) {
	prg := p.programs[i]
	if prg == nil {
		return true, nil
	}
	args := c.Args
	if args == nil {
		args = map[string]any{}
	}
	caller := c.Caller
	if caller.Teams == nil {
		caller.Teams = []string{}
	}
	out, _, err := prg.Eval(map[string]any{"args": normalize(args), "caller": caller})
	if err != nil {
		return false, err
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("gave %v, not true or false", out.Value())
	}
	return b, nil
}

// normalize turns json.Number (from a decoder using UseNumber) into the
// int64 or float64 CEL compares with numbers.
func normalize(v map[string]any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = normalizeValue(x)
	}
	return out
}

func normalizeValue(x any) any {
	switch x := x.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		return normalize(x)
	case []any:
		out := make([]any, len(x))
		for i, y := range x {
			out[i] = normalizeValue(y)
		}
		return out
	}
	return x
}
