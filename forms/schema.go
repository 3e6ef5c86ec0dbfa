package forms

import (
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
)

// textareaFrom is the maxLength above which a plain string gets a textarea.
const textareaFrom = 200

// anyOfAsJSON says why an answer combining rules is typed as JSON.
const anyOfAsJSON = "This answer combines rules (anyOf) that this page cannot show as a simple control, so type it as JSON."

// newField classifies one property schema into a control.
func (f *Form) newField(i int, name string, sch any, required bool) Field {
	fd := Field{
		Name:      name,
		ID:        f.idBase + "-f" + strconv.Itoa(i),
		InputName: f.Prefix + name,
		Label:     name,
		Required:  required,
	}
	if fd.Label == "" {
		fd.Label = "Answer"
	}
	m, ok := sch.(map[string]any)
	if !ok {
		fd.Kind = KindJSON
		fd.Reason = "The server accepts any JSON value here, so type it as JSON."
		return fd
	}
	if t, ok := m["title"].(string); ok && strings.TrimSpace(t) != "" {
		fd.Label = t
	}
	if d, ok := m["description"].(string); ok {
		fd.Help = d
	}
	toJSON := func(reason string) Field {
		fd.Kind = KindJSON
		fd.Reason = reason
		return fd
	}
	for _, kw := range []string{"$ref", "$dynamicRef", "$recursiveRef"} {
		if _, ok := m[kw]; ok {
			return toJSON("The server describes this answer by pointing to another schema, which this page cannot show as a simple control, so type it as JSON.")
		}
	}
	for _, kw := range []string{"allOf", "not", "if", "then", "else"} {
		if _, ok := m[kw]; ok {
			return toJSON("This answer combines rules (" + kw + ") that this page cannot show as a simple control, so type it as JSON.")
		}
	}
	typ, ok := singleType(m["type"])
	if !ok {
		return toJSON("This answer may be more than one kind of value, so type it as JSON.")
	}
	switch typ {
	case "string", "":
		if opts, ok, present := choices(m); present {
			if !ok {
				return toJSON("The choices for this answer are not plain text options, so type it as JSON.")
			}
			fd.Options = opts
			fd.Kind = KindRadio
			if len(opts) > maxRadios {
				fd.Kind = KindSelect
			}
			return fd
		}
		if typ == "" {
			return toJSON("The server did not say what kind of answer this is, so type it as JSON.")
		}
		if _, ok := m["anyOf"]; ok {
			return toJSON(anyOfAsJSON)
		}
		f.textField(&fd, m)
	case "number", "integer":
		for _, kw := range []string{"enum", "const", "oneOf", "anyOf"} {
			if _, ok := m[kw]; ok {
				return toJSON("This answer is a choice among numbers, which this page cannot show as a simple control, so type it as JSON.")
			}
		}
		numberField(&fd, m, typ == "integer")
	case "boolean":
		if _, ok := m["anyOf"]; ok {
			return toJSON(anyOfAsJSON)
		}
		fd.Kind = KindCheckbox
	case "array":
		items, _ := m["items"].(map[string]any)
		it, _ := singleType(items["type"])
		opts, ok, present := choices(items)
		if !present || !ok || (it != "string" && it != "") {
			return toJSON("This answer is a list this page cannot show as choices, so type it as a JSON list.")
		}
		fd.Kind = KindCheckboxes
		fd.Options = opts
		fd.MinItems = intAttr(m["minItems"])
		fd.MaxItems = intAttr(m["maxItems"])
	case "object":
		return toJSON("This answer is a group of values, so type it as a JSON object.")
	default:
		return toJSON("This page does not know the kind of answer " + strconv.Quote(typ) + ", so type it as JSON.")
	}
	return fd
}

func (f *Form) textField(fd *Field, m map[string]any) {
	switch m["format"] {
	case "email":
		fd.Kind = KindEmail
	case "uri":
		fd.Kind = KindURL
	case "date":
		fd.Kind = KindDate
	case "date-time":
		fd.Kind = KindDateTime
		return
	default:
		fd.Kind = KindText
	}
	if fd.Kind == KindDate {
		return
	}
	fd.MinLength = intAttr(m["minLength"])
	fd.MaxLength = intAttr(m["maxLength"])
	pattern, _ := m["pattern"].(string)
	def, _ := m["default"].(string)
	long := fd.MaxLength != nil && *fd.MaxLength > textareaFrom || strings.Contains(def, "\n")
	if fd.Kind == KindText && pattern == "" && long {
		fd.Kind = KindTextarea
	}
	if pattern != "" {
		fd.Pattern = htmlPattern(pattern)
	}
}

// htmlPattern adapts a JSON Schema pattern (matches anywhere) to the HTML
// pattern attribute (must match the whole value).
func htmlPattern(p string) string {
	if strings.HasPrefix(p, "^") && strings.HasSuffix(p, "$") && !strings.HasSuffix(p, `\$`) {
		return p
	}
	return ".*(?:" + p + ").*"
}

func numberField(fd *Field, m map[string]any, integer bool) {
	if !integer {
		fd.Kind = KindNumber
		fd.Step = "any"
		fd.Min, fd.AboveMin = tighter(m["minimum"], m["exclusiveMinimum"], 1)
		fd.Max, fd.BelowMax = tighter(m["maximum"], m["exclusiveMaximum"], -1)
		return
	}
	fd.Kind = KindInteger
	fd.Step = "1"
	// The browser counts steps from min, so integer bounds must be integers.
	var lo, hi *big.Int
	if r := rat(m["minimum"]); r != nil {
		lo = ceil(r)
	}
	if r := rat(m["exclusiveMinimum"]); r != nil {
		if c := new(big.Int).Add(floor(r), big.NewInt(1)); lo == nil || c.Cmp(lo) > 0 {
			lo = c
		}
	}
	if r := rat(m["maximum"]); r != nil {
		hi = floor(r)
	}
	if r := rat(m["exclusiveMaximum"]); r != nil {
		if c := new(big.Int).Sub(ceil(r), big.NewInt(1)); hi == nil || c.Cmp(hi) < 0 {
			hi = c
		}
	}
	if lo != nil {
		fd.Min = lo.String()
	}
	if hi != nil {
		fd.Max = hi.String()
	}
}

// singleType reads "type": a string, or a list of one type and "null" (the
// form never sends null, so the other type decides). ok is false for
// anything else.
func singleType(t any) (string, bool) {
	switch t := t.(type) {
	case nil:
		return "", true
	case string:
		return t, true
	case []any:
		var got []string
		for _, x := range t {
			s, ok := x.(string)
			if !ok {
				return "", false
			}
			if s != "null" {
				got = append(got, s)
			}
		}
		if len(got) == 1 {
			return got[0], true
		}
	}
	return "", false
}

// choices reads the options of a select: titled oneOf/anyOf of {const,
// title}, or enum (with legacy enumNames), or a single string const.
// present says the schema offers choices at all; ok that they are usable.
func choices(m map[string]any) (opts []Option, ok, present bool) {
	for _, kw := range []string{"oneOf", "anyOf"} {
		if list, has := m[kw]; has {
			opts, ok = titled(list)
			return opts, ok, true
		}
	}
	if list, has := m["enum"]; has {
		names, _ := m["enumNames"].([]any)
		values, _ := list.([]any)
		seen := map[string]bool{}
		for i, v := range values {
			s, isStr := v.(string)
			if !isStr {
				return nil, false, true
			}
			label := s
			if i < len(names) {
				if n, _ := names[i].(string); strings.TrimSpace(n) != "" {
					label = n
				}
			}
			if !seen[s] {
				seen[s] = true
				opts = append(opts, Option{Value: s, Label: label})
			}
		}
		return opts, len(opts) > 0, true
	}
	if c, has := m["const"]; has {
		s, isStr := c.(string)
		return []Option{{Value: s, Label: s}}, isStr, true
	}
	return nil, false, false
}

// titled reads a list of {"const": "...", "title": "..."}.
func titled(list any) ([]Option, bool) {
	items, _ := list.([]any)
	var opts []Option
	seen := map[string]bool{}
	for _, it := range items {
		m, _ := it.(map[string]any)
		v, ok := m["const"].(string)
		if !ok {
			return nil, false
		}
		label := v
		if t, _ := m["title"].(string); strings.TrimSpace(t) != "" {
			label = t
		}
		if !seen[v] {
			seen[v] = true
			opts = append(opts, Option{Value: v, Label: label})
		}
	}
	return opts, len(opts) > 0
}

func rat(v any) *big.Rat {
	n, ok := v.(json.Number)
	if !ok {
		return nil
	}
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil
	}
	return r
}

func floor(r *big.Rat) *big.Int {
	// Rat denominators are positive and Int.Div is Euclidean, so this rounds down.
	return new(big.Int).Div(r.Num(), r.Denom())
}

func ceil(r *big.Rat) *big.Int {
	c := floor(r)
	if !r.IsInt() {
		c.Add(c, big.NewInt(1))
	}
	return c
}

// intAttr reads a non-negative integer keyword such as minLength.
func intAttr(v any) *int {
	r := rat(v)
	if r == nil || !r.IsInt() || r.Sign() < 0 || !r.Num().IsInt64() || r.Num().Int64() > 1<<31 {
		return nil
	}
	n := int(r.Num().Int64())
	return &n
}

// numAttr passes a JSON number through as an HTML number attribute.
// tighter picks the stricter of an inclusive and an exclusive bound of a
// decimal number (sign 1 for a floor, -1 for a ceiling), and says whether
// it is the exclusive one. An exclusive bound equal to the inclusive one
// is the stricter.
func tighter(inclusive, exclusive any, sign int) (string, bool) {
	in, ex := rat(inclusive), rat(exclusive)
	switch {
	case ex == nil:
		return numAttr(inclusive), false
	case in == nil || ex.Cmp(in)*sign >= 0:
		return numAttr(exclusive), true
	}
	return numAttr(inclusive), false
}

func numAttr(v any) string {
	if n, ok := v.(json.Number); ok {
		return string(n)
	}
	return ""
}
