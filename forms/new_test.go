package forms

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

var safeID = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

func TestNew(t *testing.T) {
	colors := []Option{{"Red", "Red"}, {"Green", "Green"}, {"Blue", "Blue"}}
	hexColors := []Option{{"#FF0000", "Red"}, {"#00FF00", "Green"}, {"#0000FF", "Blue"}}
	tests := []struct {
		name   string
		schema string
		check  func(t *testing.T, f *Form)
	}{
		{
			name:   "StringEmail",
			schema: string(MustFixture(t, "spec/string-email.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				want := Field{Name: "displayName", ID: "q0-f0", InputName: "q0displayName", Label: "Display Name", Help: "Description text",
					Kind: KindEmail, MinLength: intp(3), MaxLength: intp(50), Value: "user@example.com"}
				if !reflect.DeepEqual(fd, want) {
					t.Errorf("field:\n got %+v\nwant %+v", fd, want)
				}
				if fd.InputType() != "email" {
					t.Errorf("InputType = %q", fd.InputType())
				}
			},
		},
		{
			name:   "Number",
			schema: string(MustFixture(t, "spec/number.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindNumber || fd.Min != "0" || fd.Max != "100" || fd.Step != "any" || fd.Value != "50" || fd.InputType() != "number" {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "IntegerBoundsRoundedInward",
			schema: `{"type":"object","properties":{"n":{"type":"integer","minimum":1.5,"exclusiveMaximum":10,"default":4}}}`,
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindInteger || fd.Min != "2" || fd.Max != "9" || fd.Step != "1" || fd.Value != "4" {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "IntegerExclusiveMinimumNegative",
			schema: `{"type":"object","properties":{"n":{"type":"integer","exclusiveMinimum":-2.5,"maximum":-0.5}}}`,
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Min != "-2" || fd.Max != "-1" {
					t.Errorf("min, max = %q, %q, want -2, -1", fd.Min, fd.Max)
				}
			},
		},
		{
			name:   "BooleanDefaultFalse",
			schema: string(MustFixture(t, "spec/boolean.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindCheckbox || fd.Checked || fd.ShowRequired() {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "BooleanDefaultTrue",
			schema: `{"type":"object","properties":{"ok":{"type":"boolean","default":true}},"required":["ok"]}`,
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if !fd.Checked || !fd.Required || fd.ShowRequired() {
					t.Errorf("got %+v; a boolean always has an answer, so it is never marked required", fd)
				}
			},
		},
		{
			name:   "UntitledSingleSelect",
			schema: string(MustFixture(t, "spec/untitled-single-select.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindRadio || !reflect.DeepEqual(fd.Options, colors) || fd.Value != "Red" || !fd.Selected("Red") || fd.Selected("Green") {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "TitledSingleSelect",
			schema: string(MustFixture(t, "spec/titled-single-select.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindRadio || !reflect.DeepEqual(fd.Options, hexColors) || fd.Value != "#FF0000" {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "LegacyEnumNames",
			schema: string(MustFixture(t, "spec/legacy-titled-enum.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindRadio || !reflect.DeepEqual(fd.Options, hexColors) || fd.Value != "#00FF00" {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "EnumNamesShorterThanEnum",
			schema: `{"type":"object","properties":{"c":{"type":"string","enum":["a","b"],"enumNames":["Aye"]}}}`,
			check: func(t *testing.T, f *Form) {
				if got := only(t, f).Options; !reflect.DeepEqual(got, []Option{{"a", "Aye"}, {"b", "b"}}) {
					t.Errorf("options = %+v", got)
				}
			},
		},
		{
			name:   "FiveOptionsAreRadios",
			schema: `{"type":"object","properties":{"c":{"type":"string","enum":["1","2","3","4","5"]}}}`,
			check: func(t *testing.T, f *Form) {
				if k := only(t, f).Kind; k != KindRadio {
					t.Errorf("kind = %s", k)
				}
			},
		},
		{
			name:   "SixOptionsAreASelect",
			schema: `{"type":"object","properties":{"c":{"type":"string","oneOf":[{"const":"1"},{"const":"2","title":"Two"},{"const":"3"},{"const":"4"},{"const":"5"},{"const":"6"}]}}}`,
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindSelect || len(fd.Options) != 6 || fd.Options[0].Label != "1" || fd.Options[1].Label != "Two" {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "UntitledMultiSelect",
			schema: string(MustFixture(t, "spec/untitled-multi-select.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindCheckboxes || !reflect.DeepEqual(fd.Options, colors) || !reflect.DeepEqual(fd.Values, []string{"Red", "Green"}) ||
					*fd.MinItems != 1 || *fd.MaxItems != 2 || fd.Hint() != "Choose 1 to 2." {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name:   "TitledMultiSelect",
			schema: string(MustFixture(t, "spec/titled-multi-select.json")),
			check: func(t *testing.T, f *Form) {
				fd := only(t, f)
				if fd.Kind != KindCheckboxes || !reflect.DeepEqual(fd.Options, hexColors) || !reflect.DeepEqual(fd.Values, []string{"#FF0000", "#00FF00"}) {
					t.Errorf("got %+v", fd)
				}
			},
		},
		{
			name: "FormatsAndDefaults",
			schema: `{"type":"object","properties":{
				"site":{"type":"string","format":"uri","default":"https://example.com"},
				"day":{"type":"string","format":"date","default":"2026-07-28"},
				"at":{"type":"string","format":"date-time","default":"2026-07-28T14:30:00Z"},
				"at2":{"type":"string","format":"date-time","default":"2026-07-28T16:30:15+02:00"},
				"other":{"type":"string","format":"uuid","default":"x"}}}`,
			check: func(t *testing.T, f *Form) {
				want := []struct {
					kind        Kind
					value, step string
				}{{KindURL, "https://example.com", ""}, {KindDate, "2026-07-28", ""}, {KindDateTime, "2026-07-28T14:30", ""},
					{KindDateTime, "2026-07-28T14:30:15", "any"}, {KindText, "x", ""}}
				for i, w := range want {
					fd := f.Fields[i]
					if fd.Kind != w.kind || fd.Value != w.value || fd.Step != w.step {
						t.Errorf("field %s: got kind %s value %q step %q, want %+v", fd.Name, fd.Kind, fd.Value, fd.Step, w)
					}
				}
				if !f.HasDateTime() || f.TimeZone != "UTC" {
					t.Errorf("HasDateTime %v, TimeZone %q", f.HasDateTime(), f.TimeZone)
				}
			},
		},
		{
			name:   "PatternWrappedForHTML",
			schema: `{"type":"object","properties":{"a":{"type":"string","pattern":"[0-9]+"},"b":{"type":"string","pattern":"^[a-z]+$"}}}`,
			check: func(t *testing.T, f *Form) {
				if f.Fields[0].Pattern != ".*(?:[0-9]+).*" || f.Fields[1].Pattern != "^[a-z]+$" {
					t.Errorf("patterns %q, %q", f.Fields[0].Pattern, f.Fields[1].Pattern)
				}
			},
		},
		{
			name:   "LongTextIsATextarea",
			schema: `{"type":"object","properties":{"a":{"type":"string","maxLength":1000},"b":{"type":"string","default":"line 1\nline 2"},"c":{"type":"string","maxLength":200}}}`,
			check: func(t *testing.T, f *Form) {
				if f.Fields[0].Kind != KindTextarea || f.Fields[1].Kind != KindTextarea || f.Fields[2].Kind != KindText {
					t.Errorf("kinds %s %s %s", f.Fields[0].Kind, f.Fields[1].Kind, f.Fields[2].Kind)
				}
			},
		},
		{
			name:   "NullableType",
			schema: `{"type":"object","properties":{"a":{"type":["string","null"]}}}`,
			check: func(t *testing.T, f *Form) {
				if k := only(t, f).Kind; k != KindText {
					t.Errorf("kind %s", k)
				}
			},
		},
		{
			name:   "PropertyOrderKept",
			schema: `{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"string"},"mu":{"type":"string"}}}`,
			check: func(t *testing.T, f *Form) {
				var names []string
				for _, fd := range f.Fields {
					names = append(names, fd.Name)
				}
				if strings.Join(names, ",") != "zeta,alpha,mu" {
					t.Errorf("order %v", names)
				}
			},
		},
		{
			name: "OnePropertyOutsideTheSubsetIsJSON",
			schema: `{"type":"object","$defs":{"P":{"type":"string"}},"properties":{
				"name":{"type":"string"},
				"address":{"type":"object","properties":{"city":{"type":"string"}}},
				"people":{"type":"array","items":{"type":"object"}},
				"ref":{"$ref":"#/$defs/P"},
				"weird":{"type":"wibble"},
				"anything":true,
				"numbers":{"type":"integer","enum":[1,2]},
				"two":{"type":["string","integer"]}},
				"required":["name","ghost"]}`,
			check: func(t *testing.T, f *Form) {
				kinds := map[string]Kind{}
				for _, fd := range f.Fields {
					kinds[fd.Name] = fd.Kind
					if fd.Kind == KindJSON && fd.Reason == "" {
						t.Errorf("%s: KindJSON without a reason", fd.Name)
					}
				}
				want := map[string]Kind{"name": KindText, "address": KindJSON, "people": KindJSON, "ref": KindJSON,
					"weird": KindJSON, "anything": KindJSON, "numbers": KindJSON, "two": KindJSON, "ghost": KindJSON}
				if !reflect.DeepEqual(kinds, want) {
					t.Errorf("kinds = %v, want %v", kinds, want)
				}
				if last := f.Fields[len(f.Fields)-1]; last.Name != "ghost" || !last.Required {
					t.Errorf("undescribed required property: %+v", last)
				}
				if f.Fallback || f.Empty {
					t.Errorf("Fallback %v Empty %v", f.Fallback, f.Empty)
				}
			},
		},
		{
			name:   "UntrustedNameNeverInID",
			schema: `{"type":"object","properties":{"\"><script>alert(1)</script>":{"type":"string"},"a b":{"type":"boolean"}}}`,
			check: func(t *testing.T, f *Form) {
				for i, fd := range f.Fields {
					if !safeID.MatchString(fd.ID) || fd.ID != "q0-f"+string(rune('0'+i)) {
						t.Errorf("ID %q", fd.ID)
					}
				}
				if f.Fields[0].InputName != `q0"><script>alert(1)</script>` || f.Fields[1].PresentName() != "q0a b$present" {
					t.Errorf("names %q %q", f.Fields[0].InputName, f.Fields[1].PresentName())
				}
			},
		},
		{
			name:   "EmptyProperties",
			schema: string(MustFixture(t, "seeds/none.json")),
			check: func(t *testing.T, f *Form) {
				if !f.Empty || f.Fallback || len(f.Fields) != 0 {
					t.Errorf("Empty %v Fallback %v fields %d", f.Empty, f.Fallback, len(f.Fields))
				}
			},
		},
		{
			name:   "ObjectWithoutProperties",
			schema: `{"type":"object"}`,
			check: func(t *testing.T, f *Form) {
				if !f.Empty || f.Fallback {
					t.Errorf("Empty %v Fallback %v", f.Empty, f.Fallback)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, MustNew(t, tt.schema, "q0"))
		})
	}
}

func TestNewFallback(t *testing.T) {
	tests := []struct {
		name, schema, wantJSON string
	}{
		{"Missing", ``, "{}"},
		{"Null", `null`, "{}"},
		{"NotAnObject", `"hello"`, "{}"},
		{"TrueSchema", `true`, "{}"},
		{"ArraySchema", `[]`, "{}"},
		{"TopLevelRef", `{"$ref":"#/$defs/A","$defs":{"A":{"type":"object"}}}`, "{}"},
		{"ScalarType", `{"type":"string"}`, "{}"},
		{"NoTypeNoProperties", `{}`, "{}"},
		{"PropertiesNotAnObject", `{"type":"object","properties":[1]}`, "{}"},
		{"TopLevelAllOf", `{"type":"object","properties":{"a":{"type":"string","default":"x"}},"allOf":[{"required":["a"]}]}`, "{\n  \"a\": \"x\"\n}"},
		{"NameClashWithMarker", `{"type":"object","properties":{"a":{"type":"boolean"},"a$present":{"type":"string"}}}`, "{}"},
		{"NameClashWithJSON", `{"type":"object","properties":{"$json":{"type":"string"}}}`, "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := MustNew(t, tt.schema, "q0.")
			if !f.Fallback || f.Empty || len(f.Fields) != 0 {
				t.Fatalf("Fallback %v Empty %v fields %d", f.Fallback, f.Empty, len(f.Fields))
			}
			if !strings.HasSuffix(f.FallbackReason, ".") || len(f.FallbackReason) < 30 {
				t.Errorf("reason %q is not a sentence", f.FallbackReason)
			}
			if f.JSON != tt.wantJSON {
				t.Errorf("JSON = %q, want %q", f.JSON, tt.wantJSON)
			}
			if f.JSONName() != "q0.$json" || !safeID.MatchString(f.JSONID()) {
				t.Errorf("JSONName %q JSONID %q", f.JSONName(), f.JSONID())
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	deep := strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth)
	tooDeep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	big := `{"type":"object","description":"` + strings.Repeat("x", MaxSchemaBytes) + `"}`
	var many strings.Builder
	many.WriteString(`{"type":"object","properties":{`)
	for i := range MaxFields + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		many.WriteString(`"p` + strings.Repeat("x", i) + `":{"type":"string"}`)
	}
	many.WriteString("}}")
	tests := []struct {
		name, schema string
		want         error
	}{
		{"TooLarge", big, ErrSchemaTooLarge},
		{"TooDeep", tooDeep, ErrSchemaTooDeep},
		{"TooManyFields", many.String(), ErrTooManyFields},
		{"Malformed", `{"type":"object",`, ErrSchemaMalformed},
		{"TrailingGarbage", `{"type":"object"} {}`, ErrSchemaMalformed},
		{"HugeExponent", `{"type":"object","properties":{"n":{"type":"number","minimum":1e1000000}}}`, ErrSchemaMalformed},
		{"LongNumber", `{"type":"object","properties":{"n":{"type":"number","minimum":1` + strings.Repeat("0", 200) + `}}}`, ErrSchemaMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := New(json.RawMessage(tt.schema), "q0")
			if !errors.Is(err, tt.want) || f != nil {
				t.Fatalf("New = %v, %v; want %v", f, err, tt.want)
			}
			if _, err := Validate(json.RawMessage(tt.schema), map[string]any{}); !errors.Is(err, tt.want) {
				t.Errorf("Validate err = %v, want %v", err, tt.want)
			}
		})
	}
	t.Run("ExactlyMaxDepthAccepted", func(t *testing.T) {
		if _, err := New(json.RawMessage(deep), "q0"); err != nil {
			t.Errorf("depth %d refused: %v", MaxDepth, err)
		}
	})
}

func TestIDBase(t *testing.T) {
	tests := []struct{ prefix, want string }{
		{"q0", "q0"},
		{"round-1_q2", "round-1_q2"},
	}
	for _, tt := range tests {
		if got := idBase(tt.prefix); got != tt.want {
			t.Errorf("idBase(%q) = %q, want %q", tt.prefix, got, tt.want)
		}
	}
	seen := map[string]string{}
	for _, p := range []string{"", "q0.", "q0-", "q0_", "0", "q0[", "é", "\"><", "q0..", "q0.."} {
		id := idBase(p)
		if !safeID.MatchString(id) {
			t.Errorf("idBase(%q) = %q is not a safe id", p, id)
		}
		if other, ok := seen[id]; ok && other != p {
			t.Errorf("idBase(%q) = idBase(%q) = %q", p, other, id)
		}
		seen[id] = p
	}
}

// only returns the form's single field.
func only(t *testing.T, f *Form) Field {
	t.Helper()
	if f.Fallback || len(f.Fields) != 1 {
		t.Fatalf("want one field, got Fallback %v (%s) and %d fields", f.Fallback, f.FallbackReason, len(f.Fields))
	}
	return f.Fields[0]
}
