package approvals

import (
	"encoding/json"
	"strings"
	"testing"
)

func ptr(b bool) *bool { return &b }

// bank is the example, with a rule on the caller behind it.
const bank = `[
	{"tools": ["transfer"], "when": "args.amount > 1000 || !(\"finance\" in caller.teams)", "ask": "team:finance", "needs": 2},
	{"tools": ["refund"], "when": "caller.agent != '' && args.amount >= 50", "ask": "ada"},
	{"tools": "destructive", "ask": "team:ops"}
]`

func TestMatch(t *testing.T) {
	p := MustParse(bank)
	readOnly := &Annotations{ReadOnlyHint: ptr(true)}
	finance := Caller{Name: "bo", Teams: []string{"finance"}}
	tests := []struct {
		name    string
		call    Call
		rule    int // 1-based, 0 for none
		evalErr bool
	}{
		{"LargeTransferByFinance", Call{Tool: "transfer", Annotations: readOnly, Args: map[string]any{"amount": 5000.0}, Caller: finance}, 1, false},
		{"SmallTransferByFinance", Call{Tool: "transfer", Annotations: readOnly, Args: map[string]any{"amount": 20.0}, Caller: finance}, 0, false},
		{"SmallTransferByOutsider", Call{Tool: "transfer", Annotations: readOnly, Args: map[string]any{"amount": 20.0}, Caller: Caller{Name: "cy"}}, 1, false},
		{"IntegerAmount", Call{Tool: "transfer", Annotations: readOnly, Args: map[string]any{"amount": 1001}, Caller: finance}, 1, false},
		{"JSONNumberAmount", Call{Tool: "transfer", Annotations: readOnly, Args: map[string]any{"amount": json.Number("1000.5")}, Caller: finance}, 1, false},
		// args.amount is missing: the condition cannot be evaluated, so
		// the rule applies rather than letting the transfer through.
		{"MissingAmountAsks", Call{Tool: "transfer", Annotations: readOnly, Args: map[string]any{}, Caller: finance}, 1, true},
		{"AmountNotANumberAsks", Call{Tool: "transfer", Annotations: readOnly, Args: map[string]any{"amount": "lots"}, Caller: finance}, 1, true},
		{"RefundByAgent", Call{Tool: "refund", Annotations: readOnly, Args: map[string]any{"amount": 50.0}, Caller: Caller{Name: "bo", Agent: "claude-code"}}, 2, false},
		{"RefundInBrowser", Call{Tool: "refund", Annotations: readOnly, Args: map[string]any{"amount": 50.0}, Caller: Caller{Name: "bo"}}, 0, false},
		// Not read-only and not covered by its own rule's condition: the
		// destructive rule catches it.
		{"RefundInBrowserNoAnnotations", Call{Tool: "refund", Args: map[string]any{"amount": 50.0}, Caller: Caller{Name: "bo"}}, 3, false},
		{"NoAnnotationsIsDestructive", Call{Tool: "drop_table"}, 3, false},
		{"EmptyAnnotationsIsDestructive", Call{Tool: "drop_table", Annotations: &Annotations{}}, 3, false},
		{"DestructiveHintTrue", Call{Tool: "drop_table", Annotations: &Annotations{DestructiveHint: ptr(true)}}, 3, false},
		{"DestructiveHintFalse", Call{Tool: "append_row", Annotations: &Annotations{DestructiveHint: ptr(false)}}, 0, false},
		{"ReadOnly", Call{Tool: "list_rows", Annotations: readOnly}, 0, false},
		{"ReadOnlyWinsOverDestructiveHint", Call{Tool: "list_rows", Annotations: &Annotations{ReadOnlyHint: ptr(true), DestructiveHint: ptr(true)}}, 0, false},
		{"ReadOnlyFalse", Call{Tool: "list_rows", Annotations: &Annotations{ReadOnlyHint: ptr(false)}}, 3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, i, err := p.Match(tt.call)
			if (err != nil) != tt.evalErr {
				t.Errorf("Match error = %v, want an error: %v", err, tt.evalErr)
			}
			if tt.rule == 0 {
				if r != nil || i != -1 {
					t.Fatalf("Match = rule %d (%+v), want none", i+1, r)
				}
				return
			}
			if r == nil || i != tt.rule-1 {
				t.Fatalf("Match = rule %d (%+v), want rule %d", i+1, r, tt.rule)
			}
			if want := p.Rules()[i]; r.When != want.When || r.Asks() != want.Asks() {
				t.Errorf("Match returned %+v, not rule %d", r, tt.rule)
			}
		})
	}
}

func TestMatchEvaluationErrorSaysWhy(t *testing.T) {
	p := MustParse(bank)
	_, _, err := p.Match(Call{Tool: "transfer", Caller: Caller{Teams: []string{"finance"}}})
	if err == nil || !strings.Contains(err.Error(), "rule 1") || !strings.Contains(err.Error(), "no such key: amount") ||
		!strings.Contains(err.Error(), "the rule applies") {
		t.Fatalf("Match error = %v, want one naming rule 1, the missing key and that the rule applies", err)
	}
}

func TestMatchCostLimit(t *testing.T) {
	p := MustParse(`[{"tools": ["t"], "when": "args.items.all(a, args.items.all(b, args.items.all(c, a + b + c >= 0)))", "ask": "ada"}]`)
	items := make([]any, 200)
	for i := range items {
		items[i] = float64(i)
	}
	r, _, err := p.Match(Call{Tool: "t", Args: map[string]any{"items": items}})
	if r == nil || err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Fatalf("Match = %+v, %v; want the rule, with the cost limit as the reason", r, err)
	}
	r, _, err = p.Match(Call{Tool: "t", Args: map[string]any{"items": items[:3]}})
	if r == nil || err != nil {
		t.Fatalf("Match on three items = %+v, %v; want the rule, no error", r, err)
	}
}

func TestMatchEmptyPolicy(t *testing.T) {
	for _, p := range []*Policy{nil, MustParse(``), MustParse(`null`)} {
		if r, i, err := p.Match(Call{Tool: "anything"}); r != nil || i != -1 || err != nil {
			t.Errorf("Match on an empty policy = %+v, %d, %v; want nothing", r, i, err)
		}
		if !p.Empty() {
			t.Errorf("policy %v is not Empty", p)
		}
	}
}

func TestMatchFirstRuleWins(t *testing.T) {
	p := MustParse(`[{"tools": ["t"], "when": "caller.name == 'ada'", "ask": "bo"},
		{"tools": ["t"], "ask": "cy"}, {"tools": ["t"], "ask": "di"}]`)
	if r, i, _ := p.Match(Call{Tool: "t", Caller: Caller{Name: "ada"}}); i != 0 || r.Asks() != "bo" {
		t.Errorf("ada's call: rule %d asking %v, want rule 1 asking bo", i+1, r)
	}
	if r, i, _ := p.Match(Call{Tool: "t", Caller: Caller{Name: "eve"}}); i != 1 || r.Asks() != "cy" {
		t.Errorf("eve's call: rule %d asking %v, want rule 2 asking cy", i+1, r)
	}
}

func TestAnnotationsOf(t *testing.T) {
	for raw, destructive := range map[string]bool{
		`{"name": "t"}`:                                                                  true,
		`{"name": "t", "annotations": {}}`:                                               true,
		`{"name": "t", "annotations": {"title": "T"}}`:                                   true,
		`{"name": "t", "annotations": {"readOnlyHint": true}}`:                           false,
		`{"name": "t", "annotations": {"readOnlyHint": false}}`:                          true,
		`{"name": "t", "annotations": {"destructiveHint": false}}`:                       false,
		`{"name": "t", "annotations": {"destructiveHint": true, "readOnlyHint": false}}`: true,
		`not json`: true,
	} {
		if got := AnnotationsOf(json.RawMessage(raw)).Destructive(); got != destructive {
			t.Errorf("%s: Destructive = %v, want %v", raw, got, destructive)
		}
	}
}

// TestDocExamples: the conditions docs/approvals.md shows compile, and
// hold or not as the page says.
func TestDocExamples(t *testing.T) {
	ops := Caller{Name: "bo", Teams: []string{"ops"}}
	for _, tc := range []struct {
		when string
		call Call
		want bool
	}{
		{`args.amount > 1000`, Call{Args: map[string]any{"amount": 1000.5}}, true},
		{`args.amount > 1000 || !("finance" in caller.teams)`, Call{Args: map[string]any{"amount": 10.0}, Caller: ops}, true},
		{`caller.agent != ""`, Call{Caller: Caller{Agent: "claude-code"}}, true},
		{`caller.agent != "" && args.amount >= 50`, Call{Args: map[string]any{"amount": 50.0}}, false},
		{`args.env == "production"`, Call{Args: map[string]any{"env": "production"}}, true},
		{`args.path.startsWith("/etc/")`, Call{Args: map[string]any{"path": "/etc/passwd"}}, true},
		{`has(args.force) && args.force == true`, Call{Args: map[string]any{}}, false},
		{`has(args.force) && args.force == true`, Call{Args: map[string]any{"force": true}}, true},
		{`args.recipients.size() > 10`, Call{Args: map[string]any{"recipients": []any{"a"}}}, false},
		{`args.recipients.exists(r, !r.endsWith("@example.com"))`, Call{Args: map[string]any{"recipients": []any{"a@example.com", "b@else.org"}}}, true},
		{`!(caller.name in ["ada", "erin"])`, Call{Caller: Caller{Name: "ada"}}, false},
		{`has(args.amount) && args.amount > 1000`, Call{Args: map[string]any{}}, false},
		{`args.name.lowerAscii().contains("prod")`, Call{Args: map[string]any{"name": "PROD-db"}}, true},
	} {
		raw, _ := json.Marshal([]map[string]any{{"tools": []string{"t"}, "when": tc.when, "ask": "ada"}})
		p, err := Parse(raw)
		if err != nil {
			t.Errorf("%s: %v", tc.when, err)
			continue
		}
		tc.call.Tool = "t"
		r, _, err := p.Match(tc.call)
		if (r != nil) != tc.want || err != nil {
			t.Errorf("%s on %+v: matched %v (%v), want %v", tc.when, tc.call, r != nil, err, tc.want)
		}
	}
}
