// Package forms turns the requestedSchema of an MCP form-mode elicitation
// (revision 2026-07-28) into a form view model, decodes the posted form back
// into typed JSON content, and validates that content against the schema.
//
// Posted names: each control is named Prefix + property name, exactly. A
// boolean or multi-select field also posts a hidden Prefix+name+"$present"
// marker, so "nothing checked" is told apart from "not submitted". A fallback
// form posts its JSON as Prefix+"$json". A form with a date-time field posts
// the time zone its times were typed in as Prefix+"$tz". Decoding rebuilds all
// these names from the schema; it never parses a posted name.
package forms

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// Kind is the control a field is shown as.
type Kind string

// The controls. The string values of the input-backed kinds are not HTML
// types; use Field.InputType.
const (
	KindText       Kind = "text"
	KindTextarea   Kind = "textarea"
	KindEmail      Kind = "email"
	KindURL        Kind = "url"
	KindDate       Kind = "date"
	KindDateTime   Kind = "datetime-local"
	KindNumber     Kind = "number"
	KindInteger    Kind = "integer"
	KindCheckbox   Kind = "checkbox"   // boolean
	KindRadio      Kind = "radio"      // single select, up to 5 options
	KindSelect     Kind = "select"     // single select, more than 5 options
	KindCheckboxes Kind = "checkboxes" // multi-select
	KindJSON       Kind = "json"       // a property outside the subset, typed as JSON
)

// maxRadios is the most options shown as radios; more become a <select>.
const maxRadios = 5

// Option is one choice of a select, radio or checkbox group.
type Option struct{ Value, Label string }

// Field is one property of the requestedSchema, ready to render.
type Field struct {
	Name      string // property name as in the schema (untrusted)
	ID        string // safe HTML id, derived from the prefix and the index only
	InputName string // HTML name: Prefix + Name
	Label     string // title, else the property name
	Help      string // description
	Reason    string // KindJSON only: why this is a JSON box
	Kind      Kind
	Required  bool
	MinLength *int
	MaxLength *int
	Pattern   string // HTML pattern attribute (anchored as HTML anchors it, so unanchored schema patterns are wrapped in .*)
	Min, Max  string // HTML min and max ("" when absent)
	// AboveMin and BelowMax say that a decimal number's Min or Max is
	// itself refused (exclusiveMinimum, exclusiveMaximum): the browser's
	// min and max cannot say so, the hint and the check do.
	AboveMin, BelowMax bool
	Step               string // "any" for number and for date-times with seconds, "1" for integer
	Options            []Option
	MinItems           *int
	MaxItems           *int
	Value              string   // single-valued controls: what was typed, or the default
	Values             []string // KindCheckboxes: the selected values
	Checked            bool     // KindCheckbox
	Error              string   // message shown beside the field
}

// Form is the view model of one elicitation's requestedSchema.
type Form struct {
	Prefix         string
	Message        string // optional; the caller may set it
	Fields         []Field
	Empty          bool   // no properties: the caller shows accept / decline / cancel only
	Fallback       bool   // the schema cannot be shown as a form: one JSON textarea named Prefix+"$json"
	FallbackReason string // a sentence for the person saying why
	JSON           string // the textarea's value in fallback mode
	Errors         []string
	// TimeZone is the zone date-time answers are typed in: "UTC" unless the
	// caller called SetTimeZone or the page posted Prefix+"$tz".
	TimeZone string

	idBase string
	loc    *time.Location
	schema *jsonschema.Schema // nil when the schema cannot be compiled: answers go unchecked
	props  map[string]any     // property schemas, for fallback error labels
	order  []string           // property names in the server's order, for Encode
}

// New builds the form for requestedSchema. It returns an error only for a
// schema it refuses (too large, too deep, too many properties, malformed
// JSON). A schema it cannot show as a form becomes a Fallback form; a single
// property outside the subset becomes a KindJSON field. Defaults are
// pre-filled. prefix namespaces the posted names of this form; give each form
// on a page its own (e.g. "q0.").
func New(schema json.RawMessage, prefix string) (*Form, error) {
	f := &Form{Prefix: prefix, TimeZone: "UTC", loc: time.UTC, idBase: idBase(prefix)}
	doc, err := decodeSchema(schema)
	if errors.Is(err, ErrNoSchema) {
		f.fallback("The server did not describe the answer it expects, so type it as a JSON object.", nil)
		return f, nil
	}
	if err != nil {
		return nil, err
	}
	f.schema, err = compile(doc)
	var raw map[string]json.RawMessage
	if json.Unmarshal(schema, &raw) == nil {
		f.order = mcpclient.ObjectKeys(raw["properties"]) // in the server's order
	}
	top, _ := doc.(map[string]any)
	f.props, _ = top["properties"].(map[string]any)
	if reason := topLevelProblem(doc); reason != "" {
		f.fallback(reason, top)
		return f, nil
	}
	required := map[string]bool{}
	var requiredOrder []string
	if list, ok := top["required"].([]any); ok {
		for _, r := range list {
			if s, ok := r.(string); ok && !required[s] {
				required[s] = true
				requiredOrder = append(requiredOrder, s)
			}
		}
	}
	names := slices.Clone(f.order)
	for _, name := range requiredOrder {
		if _, ok := f.props[name]; !ok {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		f.Empty = true
		return f, nil
	}
	defaults := map[string]any{}
	for i, name := range names {
		sch, described := f.props[name]
		fd := f.newField(i, name, sch, required[name])
		if !described {
			fd.Kind = KindJSON
			fd.Reason = "The server requires this answer but did not describe it, so type it as JSON."
		}
		if m, ok := sch.(map[string]any); ok {
			if d, ok := m["default"]; ok {
				defaults[name] = d
			}
		}
		f.Fields = append(f.Fields, fd)
	}
	if name := f.nameClash(); name != "" {
		f.Fields = nil
		f.fallback("Two of the server's questions would share the name "+strconv.Quote(name)+" on this page, so type the answer as a JSON object.", top)
		return f, nil
	}
	if err != nil {
		f.salvage(top)
	}
	f.Fill(defaults)
	return f, nil
}

// fallback switches the form to one JSON textarea pre-filled with any defaults.
func (f *Form) fallback(reason string, top map[string]any) {
	f.Fallback = true
	f.FallbackReason = reason
	f.JSON = "{}"
	seed := map[string]any{}
	if d, ok := top["default"].(map[string]any); ok {
		seed = d
	} else if props, ok := top["properties"].(map[string]any); ok {
		for name, p := range props {
			if m, ok := p.(map[string]any); ok {
				if d, ok := m["default"]; ok {
					seed[name] = d
				}
			}
		}
	}
	if len(seed) > 0 {
		if b, err := json.MarshalIndent(seed, "", "  "); err == nil {
			f.JSON = string(b)
		}
	}
}

// topLevelProblem says why a schema cannot be shown as a form, or returns "".
func topLevelProblem(doc any) string {
	top, ok := doc.(map[string]any)
	if !ok {
		return "The server's description of the answer is not a JSON Schema object, so this page cannot build a form from it. Type the answer as a JSON object."
	}
	for _, kw := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if _, ok := top[kw]; ok {
			return "The server's description of the answer points to another schema, which this page cannot show as a form. Type the answer as a JSON object."
		}
	}
	t, hasType := top["type"]
	if hasType && !includesType(t, "object") {
		return "The server asked for an answer that is not a set of named fields, which this page cannot show as a form. Type the answer as JSON."
	}
	p, hasProps := top["properties"]
	if _, ok := p.(map[string]any); hasProps && !ok {
		return "The server's list of questions is malformed, so type the answer as a JSON object."
	}
	if !hasType && !hasProps {
		return "The server did not list the answers it expects, so type the answer as a JSON object."
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf", "not", "if", "then", "else",
		"dependentRequired", "dependentSchemas", "dependencies", "patternProperties",
		"propertyNames", "unevaluatedProperties"} {
		if _, ok := top[kw]; ok {
			return "The server's description of the answer uses rules (" + kw + ") that this page cannot show as a form. Type the answer as a JSON object."
		}
	}
	return ""
}

func includesType(t any, want string) bool {
	switch t := t.(type) {
	case string:
		return t == want
	case []any:
		for _, x := range t {
			if x == want {
				return true
			}
		}
	}
	return false
}

// nameClash returns a posted name two controls would share, or "".
func (f *Form) nameClash() string {
	used := map[string]bool{f.JSONName(): true}
	if f.HasDateTime() {
		used[f.TimeZoneName()] = true
	}
	for _, fd := range f.Fields {
		names := []string{fd.InputName}
		if fd.Kind == KindCheckbox || fd.Kind == KindCheckboxes {
			names = append(names, fd.PresentName())
		}
		for _, n := range names {
			if used[n] {
				return n
			}
			used[n] = true
		}
	}
	return ""
}

// salvage runs when the whole schema does not compile (say one property has
// an unknown type): it drops the properties that do not compile on their own
// and checks the rest. Fields of dropped properties go unchecked here.
func (f *Form) salvage(top map[string]any) {
	checkable := map[string]any{}
	for k, v := range top {
		if k != "$schema" && k != "properties" {
			checkable[k] = v
		}
	}
	props := map[string]any{}
	for name, sch := range f.props {
		alone := map[string]any{"allOf": []any{sch}}
		for _, k := range []string{"$defs", "definitions"} {
			if d, ok := top[k]; ok {
				alone[k] = d
			}
		}
		if _, err := compile(alone); err != nil {
			sch = true
			for i := range f.Fields {
				if f.Fields[i].Name == name {
					f.Fields[i].Kind = KindJSON
					f.Fields[i].Reason = "The server described this answer in a way this page does not understand, so type it as JSON; it is not checked before it is sent."
				}
			}
		}
		props[name] = sch
	}
	checkable["properties"] = props
	f.schema, _ = compile(checkable)
}

// idBase makes the prefix into a safe HTML id stem. A prefix that is not
// already one gets a short hash of itself, so two prefixes never share a stem.
func idBase(prefix string) string {
	var b strings.Builder
	for _, r := range prefix {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	letter := s != "" && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')
	if s == prefix && letter {
		return s
	}
	if !letter {
		s = "q" + s
	}
	h := fnv.New32a()
	h.Write([]byte(prefix))
	return fmt.Sprintf("%s-%06x", strings.TrimRight(s, "-"), h.Sum32()&0xffffff)
}

// JSONName is the posted name of the fallback textarea.
func (f *Form) JSONName() string { return f.Prefix + "$json" }

// JSONID is the HTML id of the fallback textarea.
func (f *Form) JSONID() string { return f.idBase + "-json" }

// TimeZoneName is the posted name of the time-zone input.
func (f *Form) TimeZoneName() string { return f.Prefix + "$tz" }

// IDBase is the safe HTML id stem of this form; field IDs start with it.
func (f *Form) IDBase() string { return f.idBase }

// HasDateTime reports whether any field is a date-time, so the page shows the time zone.
func (f *Form) HasDateTime() bool {
	for _, fd := range f.Fields {
		if fd.Kind == KindDateTime {
			return true
		}
	}
	return false
}

// PresentName is the posted name of the hidden marker of a boolean or multi-select field.
func (fd *Field) PresentName() string { return fd.InputName + "$present" }

// HelpID is the id of the help text.
func (fd *Field) HelpID() string { return fd.ID + "-help" }

// ErrorID is the id of the error text.
func (fd *Field) ErrorID() string { return fd.ID + "-error" }

// OptionID is the id of option i of a radio or checkbox group.
func (fd *Field) OptionID(i int) string { return fd.ID + "-o" + strconv.Itoa(i) }

// HasHelp reports whether the field shows help text (description, hint or reason).
func (fd *Field) HasHelp() bool { return fd.Help != "" || fd.Hint() != "" || fd.Reason != "" }

// DescribedBy is the aria-describedby value: the help and error ids present.
func (fd *Field) DescribedBy() string {
	var ids []string
	if fd.HasHelp() {
		ids = append(ids, fd.HelpID())
	}
	if fd.Error != "" {
		ids = append(ids, fd.ErrorID())
	}
	return strings.Join(ids, " ")
}

// ShowRequired reports whether the field is marked required. A boolean
// always has an answer (unchecked is false) and a multi-select can be
// answered with nothing unless it has minItems, so neither is marked.
func (fd *Field) ShowRequired() bool {
	switch fd.Kind {
	case KindCheckbox:
		return false
	case KindCheckboxes:
		return fd.Required && fd.MinItems != nil && *fd.MinItems > 0
	}
	return fd.Required
}

// Selected reports whether option value v is the current choice.
func (fd *Field) Selected(v string) bool {
	if fd.Kind == KindCheckboxes {
		for _, s := range fd.Values {
			if s == v {
				return true
			}
		}
		return false
	}
	return fd.Value == v
}

// InputType is the HTML type of an <input> field.
func (fd *Field) InputType() string {
	switch fd.Kind {
	case KindEmail, KindURL, KindDate, KindDateTime:
		return string(fd.Kind)
	case KindNumber, KindInteger:
		return "number"
	}
	return "text"
}

// Hint says a field's bounds in words: a number's range ("1 to 9."), a
// text's length ("3 to 80 characters.") and how many of a multi-select's
// choices to pick, which no native attribute enforces. It is empty when the
// server's own description already says those numbers, so that the page
// says it once.
func (fd *Field) Hint() string {
	var hint string
	var said []string
	switch fd.Kind {
	case KindCheckboxes:
		hint, said = countHint(fd.MinItems, fd.MaxItems, "Choose %d.", "Choose %d to %d.", "Choose at least %d.", "Choose at most %d.")
	case KindNumber, KindInteger:
		hint, said = rangeHint(fd.Min, fd.Max, fd.AboveMin, fd.BelowMax)
	case KindText, KindTextarea, KindEmail, KindURL:
		hint, said = countHint(fd.MinLength, fd.MaxLength, "Exactly %d characters.", "%d to %d characters.", "At least %d characters.", "Up to %d characters.")
	}
	if hint == "" || saysNumbers(fd.Help, said) {
		return ""
	}
	return hint
}

// Counted reports whether the field's length is limited, so that the page
// counts its characters as they are typed.
func (fd *Field) Counted() bool {
	switch fd.Kind {
	case KindText, KindTextarea, KindEmail, KindURL:
		return fd.MinLength != nil || fd.MaxLength != nil
	}
	return false
}

// CounterID is the id of the character counter of a counted field.
func (fd *Field) CounterID() string { return fd.ID + "-count" }

// countHint words a count between lo and hi, either of which may be absent.
func countHint(lo, hi *int, exactly, between, atLeast, atMost string) (string, []string) {
	switch {
	case lo != nil && *lo > 0 && hi != nil && *lo == *hi:
		return fmt.Sprintf(exactly, *lo), []string{strconv.Itoa(*lo)}
	case lo != nil && *lo > 0 && hi != nil:
		return fmt.Sprintf(between, *lo, *hi), []string{strconv.Itoa(*lo), strconv.Itoa(*hi)}
	case lo != nil && *lo > 0:
		return fmt.Sprintf(atLeast, *lo), []string{strconv.Itoa(*lo)}
	case hi != nil:
		return fmt.Sprintf(atMost, *hi), []string{strconv.Itoa(*hi)}
	}
	return "", nil
}

// rangeHint words a number's bounds, as the min and max attributes hold
// them; above and below say that the bound itself is refused.
func rangeHint(lo, hi string, above, below bool) (string, []string) {
	floor, ceiling := "at least "+lo, "at most "+hi
	if above {
		floor = "more than " + lo
	}
	if below {
		ceiling = "less than " + hi
	}
	switch {
	case lo != "" && hi != "" && !above && !below:
		return lo + " to " + hi + ".", []string{lo, hi}
	case lo != "" && hi != "":
		return sentence(floor + " and " + ceiling), []string{lo, hi}
	case lo != "":
		return sentence(floor), []string{lo}
	case hi != "":
		return sentence(ceiling), []string{hi}
	}
	return "", nil
}

// sentence starts s with a capital and ends it with a full stop.
func sentence(s string) string { return strings.ToUpper(s[:1]) + s[1:] + "." }

// numberWords are the numbers a description may spell out.
var numberWords = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
	"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"}

// saysNumbers reports whether text mentions every one of nums, in digits
// or, up to twenty, in words: "Pick one to three" says 1 and 3.
func saysNumbers(text string, nums []string) bool {
	if text == "" || len(nums) == 0 {
		return false
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.'
	}) {
		words[strings.TrimRight(w, ".")] = true
	}
	for _, n := range nums {
		n = strings.TrimPrefix(n, "-") // a range is written 1-9, and -5 as a word is 5
		said := words[n]
		if i, err := strconv.Atoi(n); err == nil && i >= 0 && i < len(numberWords) {
			said = said || words[numberWords[i]]
		}
		if !said {
			return false
		}
	}
	return true
}
