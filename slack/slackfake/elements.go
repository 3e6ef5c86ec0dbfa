package slackfake

import (
	"fmt"
	"slices"
)

// element checks one block element, of a type the block allows.
func (c *checker) element(where string, v any, allowed map[string]bool, actionIDs map[string]bool) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(where, "not an object")
		return
	}
	typ, _ := m["type"].(string)
	if !allowed[typ] {
		c.add(where, "element type %q is not allowed here", typ)
		return
	}
	where += "(" + typ + ")"
	if id, has := m["action_id"]; has {
		s, _ := id.(string)
		c.id(where+".action_id", s)
		if actionIDs[s] {
			c.add(where+".action_id", "%q is not unique in its block", s)
		}
		actionIDs[s] = true
	}
	c.plainText(where+".placeholder", m["placeholder"], MaxPlaceholder, false)
	switch typ {
	case "button":
		c.plainText(where+".text", m["text"], MaxButtonText, true)
		c.length(where+".value", m["value"], MaxButtonValue)
		c.length(where+".url", m["url"], MaxURL)
		if s, has := m["style"]; has && s != "primary" && s != "danger" {
			c.add(where+".style", "%v is neither primary nor danger", s)
		}
	case "static_select", "multi_static_select":
		c.options(where, m, MaxSelectOptions, true)
		if n, has := m["max_selected_items"]; has {
			if x, ok := number(n); !ok || x < 1 {
				c.add(where+".max_selected_items", "must be at least 1")
			}
		}
	case "radio_buttons", "checkboxes":
		c.options(where, m, MaxChoiceOptions, false)
	case "plain_text_input":
		c.textInput(where, m)
	case "number_input":
		c.numberInput(where, m)
	case "datepicker":
		if d, has := m["initial_date"]; has {
			if s, _ := d.(string); !isDate.MatchString(s) {
				c.add(where+".initial_date", "%v is not YYYY-MM-DD", d)
			}
		}
	case "datetimepicker":
		if d, has := m["initial_date_time"]; has && !validUnix(d) {
			c.add(where+".initial_date_time", "%v is not a UNIX timestamp in seconds", d)
		}
	case "email_text_input", "url_text_input":
		if s, has := m["initial_value"]; has {
			if _, ok := s.(string); !ok {
				c.add(where+".initial_value", "not a string")
			}
		}
	}
}

// options checks an element's options and initial option(s).
func (c *checker) options(where string, m map[string]any, max int, plain bool) {
	opts, _ := m["options"].([]any)
	if m["option_groups"] != nil {
		c.add(where+".option_groups", "not supported by the fake")
	}
	if len(opts) == 0 || len(opts) > max {
		c.add(where+".options", "%d options, need 1 to %d", len(opts), max)
	}
	var values []string
	for j, o := range opts {
		values = append(values, c.option(fmt.Sprintf("%s.options[%d]", where, j), o, plain))
	}
	if dupe := firstDuplicate(values); dupe != "" {
		c.add(where+".options", "value %q appears twice", dupe)
	}
	var initial []any
	if o, has := m["initial_option"]; has {
		initial = append(initial, o)
	}
	if os, has := m["initial_options"]; has {
		list, ok := os.([]any)
		if !ok {
			c.add(where+".initial_options", "not an array")
		}
		initial = append(initial, list...)
	}
	for _, o := range initial {
		om, _ := o.(map[string]any)
		v, _ := om["value"].(string)
		if !slices.Contains(values, v) {
			c.add(where+".initial_option", "value %q is not one of the options", v)
		}
	}
}

// option checks one option object and returns its value.
func (c *checker) option(where string, v any, plain bool) string {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(where, "not an object")
		return ""
	}
	if plain {
		c.plainText(where+".text", m["text"], MaxOptionText, true)
	} else {
		c.text(where+".text", m["text"], MaxOptionText, true)
	}
	c.text(where+".description", m["description"], MaxOptionText, false)
	s, _ := m["value"].(string)
	if s == "" {
		c.add(where+".value", "empty")
	}
	c.length(where+".value", s, MaxOptionValue)
	return s
}

func (c *checker) textInput(where string, m map[string]any) {
	lo, hasLo := number(m["min_length"])
	hi, hasHi := number(m["max_length"])
	if hasLo && (lo < 0 || lo > MaxInputLength) {
		c.add(where+".min_length", "%v is outside 0 to %d", lo, MaxInputLength)
	}
	if hasHi && (hi < 1 || hi > MaxInputLength) {
		c.add(where+".max_length", "%v is outside 1 to %d", hi, MaxInputLength)
	}
	if hasLo && hasHi && lo > hi {
		c.add(where, "min_length %v is above max_length %v", lo, hi)
	}
	if m["min_length"] != nil && !hasLo || m["max_length"] != nil && !hasHi {
		c.add(where, "min_length and max_length must be numbers")
	}
	c.length(where+".initial_value", m["initial_value"], MaxInputLength)
}

func (c *checker) numberInput(where string, m map[string]any) {
	decimal, ok := m["is_decimal_allowed"].(bool)
	if !ok {
		c.add(where+".is_decimal_allowed", "required, a boolean")
	}
	var bounds [2]*float64
	for i, k := range []string{"min_value", "max_value", "initial_value"} {
		v, has := m[k]
		if !has {
			continue
		}
		n, ok := numberString(v, decimal)
		if !ok {
			c.add(where+"."+k, "%v is not a string holding a %s", v, map[bool]string{true: "number", false: "whole number"}[decimal])
			continue
		}
		if i < 2 {
			bounds[i] = &n
		} else if bounds[0] != nil && n < *bounds[0] || bounds[1] != nil && n > *bounds[1] {
			c.add(where+".initial_value", "%v is outside min_value and max_value", v)
		}
	}
	if bounds[0] != nil && bounds[1] != nil && *bounds[0] > *bounds[1] {
		c.add(where, "min_value is above max_value")
	}
}

func firstDuplicate(values []string) string {
	seen := map[string]bool{}
	for _, v := range values {
		if seen[v] {
			return v
		}
		seen[v] = true
	}
	return ""
}
