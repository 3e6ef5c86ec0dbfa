package provision

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/elimity-com/scim/schema"
)

// hidden is what of a resource is never kept nor given back: the
// attributes its schemas (RFC 7643) mark returned "never" or mutability
// "writeOnly", such as the User's password, which providers that sync
// passwords send on every create and change. Names are matched in any
// case, as SCIM's are.
type hidden struct {
	top map[string]bool            // attributes of the core schema
	sub map[string]map[string]bool // sub-attributes, by their attribute
	ext map[string]hidden          // by extension schema URI
}

// secret reports whether an attribute must never be given back.
func secret(a schema.CoreAttribute) bool {
	return a.Returned() == "never" || a.Mutability() == "writeOnly"
}

// hiddenOf reads what is hidden of a resource from its core schema and
// its extensions.
func hiddenOf(core schema.Schema, extensions ...schema.Schema) hidden {
	h := hidden{top: map[string]bool{}, sub: map[string]map[string]bool{}, ext: map[string]hidden{}}
	for _, a := range core.Attributes {
		name := strings.ToLower(a.Name())
		if secret(a) {
			h.top[name] = true
			continue
		}
		for _, s := range a.SubAttributes() {
			if secret(s) {
				if h.sub[name] == nil {
					h.sub[name] = map[string]bool{}
				}
				h.sub[name][strings.ToLower(s.Name())] = true
			}
		}
	}
	for _, e := range extensions {
		h.ext[strings.ToLower(e.ID)] = hiddenOf(e)
	}
	return h
}

// names lists what is hidden, as paths, for tests and messages.
func (h hidden) names() []string {
	var out []string
	for n := range h.top {
		out = append(out, n)
	}
	for n, subs := range h.sub {
		for s := range subs {
			out = append(out, n+"."+s)
		}
	}
	for uri, e := range h.ext {
		for _, n := range e.names() {
			out = append(out, uri+":"+n)
		}
	}
	return out
}

// scrub takes what is hidden out of attrs, in place: at the top, in
// complex and multi-valued attributes, and in extensions.
func (h hidden) scrub(attrs map[string]any) {
	for k, v := range attrs {
		name := strings.ToLower(k)
		if h.top[name] {
			delete(attrs, k)
			continue
		}
		if subs := h.sub[name]; subs != nil {
			scrubSub(v, subs)
		}
		if e, ok := h.ext[name]; ok {
			if m, ok := v.(map[string]any); ok {
				e.scrub(m)
			}
		}
	}
}

func scrubSub(v any, subs map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k := range v {
			if subs[strings.ToLower(k)] {
				delete(v, k)
			}
		}
	case []any:
		for _, e := range v {
			scrubSub(e, subs)
		}
	}
}

// Limits on what a provider sends, so that a value too long for an index
// is refused with a sentence rather than failing in Postgres.
const (
	// maxName caps the strings that name a resource: userName,
	// externalId, a group's displayName.
	maxName = 256
	// maxString caps any other string.
	maxString = 4096
)

// names are the attributes capped at maxName.
var names = map[string]bool{"username": true, "externalid": true, "displayname": true}

// checkLengths refuses an attribute whose string is longer than its cap,
// naming it.
func checkLengths(attrs map[string]any) error {
	for k, v := range attrs {
		limit := maxString
		if names[strings.ToLower(k)] {
			limit = maxName
		}
		if err := checkLength(k, v, limit); err != nil {
			return err
		}
	}
	return nil
}

func checkLength(path string, v any, limit int) error {
	switch v := v.(type) {
	case string:
		if utf8.RuneCountInString(v) > limit {
			return invalidValue(fmt.Sprintf("%s is longer than %d characters.", shownPath(path), limit))
		}
	case map[string]any:
		for k, e := range v {
			if err := checkLength(path+"."+k, e, maxString); err != nil {
				return err
			}
		}
	case []any:
		for _, e := range v {
			if err := checkLength(path, e, maxString); err != nil {
				return err
			}
		}
	}
	return nil
}

// shownPath is an attribute's path in a message, cut short: a provider's
// key can be long too.
func shownPath(p string) string {
	if utf8.RuneCountInString(p) > 128 {
		return string([]rune(p)[:128]) + "…"
	}
	return p
}
