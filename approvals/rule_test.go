package approvals

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, raw, err string
	}{
		{"Empty", ``, ""},
		{"Null", `null`, ""},
		{"NoRules", `[]`, ""},
		{"IssueExample", `[{"tools": ["transfer"], "when": "args.amount > 1000", "ask": "team:finance", "needs": 2},
			{"tools": "destructive", "ask": "team:ops"}]`, ""},
		{"CallerCondition", `[{"tools": ["t"], "when": "args.amount > 1000 || !(\"finance\" in caller.teams)", "ask": "ada"}]`, ""},
		{"AgentCondition", `[{"tools": ["t"], "when": "caller.agent != 'claude-code' && caller.name.startsWith('bot')", "ask": ["ada", "team:ops"], "needs": "all"}]`, ""},
		{"NotAList", `{"tools": "destructive"}`, "want a JSON list of rules"},
		{"UnknownKey", `[{"tools": ["t"], "ask": "ada"}, {"tools": ["t"], "ask": "ada", "need": 2}]`,
			`rule 2: unknown key "need"`},
		{"ToolsMissing", `[{"ask": "ada"}]`, `rule 1: "tools" must be a list of tool names or "destructive"`},
		{"ToolsWord", `[{"tools": "all", "ask": "ada"}]`, `rule 1: "tools" must be a list of tool names or "destructive", not "all"`},
		{"ToolsEmptyList", `[{"tools": [], "ask": "ada"}]`, `rule 1: "tools" must be a list`},
		{"ToolsNumber", `[{"tools": 3, "ask": "ada"}]`, `rule 1: "tools" must be a list`},
		{"AskMissing", `[{"tools": ["t"]}]`, `rule 1: "ask" must name a person`},
		{"AskEmpty", `[{"tools": ["t"], "ask": []}]`, `rule 1: "ask" must name a person`},
		{"AskEmptyString", `[{"tools": ["t"], "ask": ""}]`, `rule 1: "" is neither a person's name nor "team:NAME"`},
		{"AskBadPerson", `[{"tools": ["t"], "ask": "ada lovelace"}]`, `rule 1: "ada lovelace" is neither a person's name`},
		{"AskBadTeam", `[{"tools": ["t"], "ask": ["ada", "team:"]}]`, `rule 1: "team:" is not a team`},
		{"AskTwice", `[{"tools": ["t"], "ask": ["ada", "ada"]}]`, `rule 1: "ada" is asked twice`},
		{"NeedsZero", `[{"tools": ["t"], "ask": "ada", "needs": 0}]`, `rule 1: "needs" must be a whole number of 1 or more, or "all", not 0`},
		{"NeedsWord", `[{"tools": ["t"], "ask": "ada", "needs": "most"}]`, `not "most"`},
		{"NeedsFraction", `[{"tools": ["t"], "ask": "ada", "needs": 1.5}]`, `not 1.5`},
		{"BadCEL", `[{"tools": ["t"], "ask": "ada"}, {"tools": ["t"], "ask": "ada"}, {"tools": ["t"], "when": "args.amount >", "ask": "ada"}]`,
			`rule 3: "when" is not valid CEL: ERROR: <input>:1:14: Syntax error`},
		{"UnknownVariable", `[{"tools": ["t"], "when": "amount > 3", "ask": "ada"}]`,
			`rule 1: "when" is not valid CEL: ERROR: <input>:1:1: undeclared reference to 'amount'`},
		{"UnknownCallerField", `[{"tools": ["t"], "when": "caller.team == 'x'", "ask": "ada"}]`,
			`undefined field 'team'`},
		{"NotBool", `[{"tools": ["t"], "when": "args.amount", "ask": "ada"}]`, `rule 1: "when" must be true or false, but gives dyn`},
		{"TooLong", `[{"tools": ["t"], "when": "` + strings.Repeat("true && ", 300) + `true", "ask": "ada"}]`,
			`rule 1: "when" is 2404 characters long; at most 2000`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse(json.RawMessage(tt.raw))
			if tt.err == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				if p == nil {
					t.Fatal("Parse gave a nil policy")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("Parse error = %v, want one containing %q", err, tt.err)
			}
		})
	}
}

func TestRuleDefaultsAndRoundTrip(t *testing.T) {
	const raw = "[\n" +
		`  {"tools":["transfer"],"when":"args.amount > 1000","ask":"team:finance","needs":2},` + "\n" +
		`  {"tools":"destructive","ask":"team:ops"},` + "\n" +
		`  {"tools":["a","b"],"ask":["ada","team:ops"],"needs":"all"}` + "\n]"
	p := MustParse(raw)
	rules := p.Rules()
	if len(rules) != 3 {
		t.Fatalf("rules = %d, want 3", len(rules))
	}
	if r := rules[1]; !r.Destructive || r.Needs != 1 || r.All || len(r.Tools) != 0 {
		t.Errorf("rule 2 = %+v, want destructive, needs 1", r)
	}
	if r := rules[2]; !r.All || strings.Join(r.People(), ",") != "ada" || strings.Join(r.Teams(), ",") != "ops" {
		t.Errorf("rule 3 = %+v (people %v, teams %v), want all of ada and team ops", r, r.People(), r.Teams())
	}
	if got := p.Text(); got != raw {
		t.Errorf("Text\n%s\nwant\n%s", got, raw)
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := Parse(b); err != nil || again.Text() != raw {
		t.Errorf("Marshal gave %s, which parses back to %v, %v", b, again.Text(), err)
	}
	if b, _ := json.Marshal(MustParse(`[]`)); string(b) != "null" {
		t.Errorf("empty policy marshals to %s, want null", b)
	}
}

func TestAsks(t *testing.T) {
	for raw, want := range map[string]string{
		`{"tools":["t"],"ask":"ada"}`:                            "ada",
		`{"tools":["t"],"ask":"team:ops"}`:                       "one of team:ops",
		`{"tools":["t"],"ask":["ada","erin"]}`:                   "one of ada, erin",
		`{"tools":["t"],"ask":"team:finance","needs":2}`:         "2 of team:finance",
		`{"tools":["t"],"ask":["ada","team:ops"],"needs":"all"}`: "all of ada, team:ops",
	} {
		var r Rule
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatal(err)
		}
		if got := r.Asks(); got != want {
			t.Errorf("%s: Asks = %q, want %q", raw, got, want)
		}
	}
}
