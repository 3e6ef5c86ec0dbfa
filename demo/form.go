package demo

import (
	"encoding/json"
	"fmt"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// form is a flat object schema of primitive properties, the subset of JSON
// Schema that form-mode elicitation allows. It is written as JSON (so it goes
// on the wire byte for byte, properties in the order written) and parsed once
// so that answers can be checked against the same text the client was shown.
type form struct {
	raw        json.RawMessage
	Properties map[string]*field `json:"properties"`
	Required   []string          `json:"required"`
}

// field is one property of a form.
type field struct {
	Type      string   `json:"type"`
	Title     string   `json:"title"`
	Format    string   `json:"format"`
	MinLength *int     `json:"minLength"`
	MaxLength *int     `json:"maxLength"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	Enum      []string `json:"enum"`
	OneOf     []choice `json:"oneOf"`
	Items     *struct {
		Enum  []string `json:"enum"`
		AnyOf []choice `json:"anyOf"`
	} `json:"items"`
	MinItems *int `json:"minItems"`
	MaxItems *int `json:"maxItems"`
	Default  any  `json:"default"`
}

// choice is one titled option of an enum.
type choice struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// mustForm parses a schema literal; the literals live in this package, so a
// bad one is a programming error.
func mustForm(schema string) *form {
	f := &form{raw: json.RawMessage(schema)}
	if err := json.Unmarshal(f.raw, f); err != nil {
		panic(fmt.Sprintf("demo: bad form schema: %v", err))
	}
	if f.Properties == nil {
		f.Properties = map[string]*field{}
	}
	return f
}

// check validates content against the form. It returns the content reduced
// to the form's properties with defaults filled in, or a sentence saying what
// is wrong.
func (f *form) check(content map[string]any) (map[string]any, string) {
	out := map[string]any{}
	var problems []string
	names := make([]string, 0, len(f.Properties))
	for name := range f.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fl := f.Properties[name]
		v, ok := content[name]
		if s, isString := v.(string); isString && strings.TrimSpace(s) == "" {
			// A blank text box means "no answer", not "the empty string".
			ok = false
		}
		if !ok || v == nil {
			if slices.Contains(f.Required, name) {
				problems = append(problems, fl.label(name)+" is required")
			} else if fl.Default != nil {
				out[name] = fl.Default
			}
			continue
		}
		if p := fl.check(v); p != "" {
			problems = append(problems, fl.label(name)+" "+p)
			continue
		}
		out[name] = v
	}
	if len(problems) > 0 {
		return nil, strings.Join(problems, "; ")
	}
	return out, ""
}

func (fl *field) label(name string) string {
	if fl.Title != "" {
		return fl.Title
	}
	return name
}

// check returns what is wrong with v, as the end of a sentence, or "".
func (fl *field) check(v any) string {
	switch fl.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return "must be text"
		}
		return fl.checkString(s)
	case "number", "integer":
		n, ok := number(v)
		if !ok {
			return "must be a number"
		}
		if fl.Type == "integer" && n != math.Trunc(n) {
			return "must be a whole number"
		}
		if fl.Minimum != nil && n < *fl.Minimum {
			return fmt.Sprintf("must be at least %g", *fl.Minimum)
		}
		if fl.Maximum != nil && n > *fl.Maximum {
			return fmt.Sprintf("must be at most %g", *fl.Maximum)
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return "must be true or false"
		}
	case "array":
		return fl.checkArray(v)
	default:
		return fmt.Sprintf("has unsupported type %q", fl.Type)
	}
	return ""
}

func (fl *field) checkString(s string) string {
	if opts := options(fl.Enum, fl.OneOf); len(opts) > 0 {
		if !slices.Contains(opts, s) {
			return "must be one of " + strings.Join(titles(fl.Enum, fl.OneOf), ", ")
		}
		return ""
	}
	n := utf8.RuneCountInString(s)
	if fl.MinLength != nil && n < *fl.MinLength {
		return fmt.Sprintf("must be at least %d characters", *fl.MinLength)
	}
	if fl.MaxLength != nil && n > *fl.MaxLength {
		return fmt.Sprintf("must be at most %d characters", *fl.MaxLength)
	}
	switch fl.Format {
	case "email":
		if a, err := mail.ParseAddress(s); err != nil || a.Address != s {
			return "must be an email address like name@example.com"
		}
	case "uri":
		if u, err := url.Parse(s); err != nil || u.Scheme == "" || (u.Host == "" && u.Opaque == "") {
			return "must be a full URL like https://example.com/page"
		}
	case "date":
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return "must be a date like 2026-07-28"
		}
	case "date-time":
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return "must be a date and time like 2026-07-28T09:30:00Z"
		}
	}
	return ""
}

func (fl *field) checkArray(v any) string {
	items, ok := v.([]any)
	if !ok {
		return "must be a list"
	}
	var allowed, names []string
	if fl.Items != nil {
		allowed = options(fl.Items.Enum, fl.Items.AnyOf)
		names = titles(fl.Items.Enum, fl.Items.AnyOf)
	}
	seen := map[string]bool{}
	for _, it := range items {
		s, ok := it.(string)
		if !ok || (len(allowed) > 0 && !slices.Contains(allowed, s)) {
			return "may only contain " + strings.Join(names, ", ")
		}
		if seen[s] {
			return "must not repeat a choice"
		}
		seen[s] = true
	}
	if fl.MinItems != nil && len(items) < *fl.MinItems {
		return fmt.Sprintf("needs at least %d %s", *fl.MinItems, plural(*fl.MinItems, "choice"))
	}
	if fl.MaxItems != nil && len(items) > *fl.MaxItems {
		return fmt.Sprintf("allows at most %d %s", *fl.MaxItems, plural(*fl.MaxItems, "choice"))
	}
	return ""
}

// options lists the values an enum accepts, untitled or titled.
func options(enum []string, titled []choice) []string {
	out := slices.Clone(enum)
	for _, c := range titled {
		out = append(out, c.Const)
	}
	return out
}

// titles lists an enum's options as a person reads them.
func titles(enum []string, titled []choice) []string {
	out := slices.Clone(enum)
	for _, c := range titled {
		out = append(out, c.Title)
	}
	return out
}

// title returns the display title of value in a titled enum.
func title(titled []choice, value string) string {
	for _, c := range titled {
		if c.Const == value {
			return c.Title
		}
	}
	return value
}

// number accepts what a JSON decoder or a Go caller may hand us for a number.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
