package slackfake

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"
)

// Block Kit's limits, from the Block Kit reference (blocks, elements,
// composition objects) and the view object's page.
const (
	MaxMessageBlocks   = 50
	MaxModalBlocks     = 100
	MaxModalTitle      = 24 // also close and submit
	MaxCallbackID      = 255
	MaxPrivateMetadata = 3000
	MaxID              = 255 // block_id, action_id
	MaxSectionText     = 3000
	MaxSectionFields   = 10
	MaxFieldText       = 2000
	MaxLabel           = 2000 // input label and hint
	MaxHeaderText      = 150
	MaxContextElements = 10
	MaxActionsElements = 25
	MaxButtonText      = 75
	MaxButtonValue     = 2000
	MaxURL             = 3000
	MaxPlaceholder     = 150
	MaxSelectOptions   = 100
	MaxChoiceOptions   = 10 // radio_buttons and checkboxes
	MaxOptionText      = 75
	MaxOptionValue     = 150
	MaxInputLength     = 3000 // plain_text_input max_length
)

// The block types and element types the fake knows. Rounds uses no others.
var (
	blockTypes = map[string]bool{"section": true, "actions": true, "input": true, "header": true, "context": true, "divider": true}
	inputTypes = map[string]bool{"plain_text_input": true, "number_input": true, "static_select": true,
		"multi_static_select": true, "radio_buttons": true, "checkboxes": true, "datepicker": true,
		"datetimepicker": true, "email_text_input": true, "url_text_input": true}
	actionTypes = map[string]bool{"button": true, "static_select": true, "multi_static_select": true,
		"radio_buttons": true, "checkboxes": true, "datepicker": true, "datetimepicker": true}
	accessoryTypes = map[string]bool{"button": true, "static_select": true, "multi_static_select": true,
		"radio_buttons": true, "checkboxes": true, "datepicker": true}
)

var isDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

// checker collects the problems of one surface (a message or a view).
type checker struct {
	problems []string
	blockIDs map[string]bool
}

func (c *checker) add(where, format string, args ...any) {
	c.problems = append(c.problems, where+": "+fmt.Sprintf(format, args...))
}

// CheckMessage checks a message's blocks and returns what breaks Block Kit.
func CheckMessage(blocks []any) []string {
	c := &checker{blockIDs: map[string]bool{}}
	if len(blocks) > MaxMessageBlocks {
		c.add("blocks", "%d blocks, more than %d in a message", len(blocks), MaxMessageBlocks)
	}
	c.blocks(blocks)
	return c.problems
}

// CheckView checks a modal view object and returns what breaks Block Kit.
func CheckView(view map[string]any) []string {
	c := &checker{blockIDs: map[string]bool{}}
	if view["type"] != "modal" {
		c.add("view.type", "must be modal, is %v", view["type"])
	}
	c.plainText("view.title", view["title"], MaxModalTitle, true)
	c.plainText("view.close", view["close"], MaxModalTitle, false)
	c.plainText("view.submit", view["submit"], MaxModalTitle, false)
	c.length("view.callback_id", view["callback_id"], MaxCallbackID)
	c.length("view.private_metadata", view["private_metadata"], MaxPrivateMetadata)
	blocks, ok := view["blocks"].([]any)
	if !ok {
		c.add("view.blocks", "missing")
		return c.problems
	}
	if len(blocks) > MaxModalBlocks {
		c.add("view.blocks", "%d blocks, more than %d in a modal", len(blocks), MaxModalBlocks)
	}
	hasInput := c.blocks(blocks)
	if hasInput && view["submit"] == nil {
		c.add("view.submit", "required when the view has an input block")
	}
	return c.problems
}

// blocks checks each block; it says whether any is an input block.
func (c *checker) blocks(blocks []any) (hasInput bool) {
	for i, b := range blocks {
		where := fmt.Sprintf("blocks[%d]", i)
		m, ok := b.(map[string]any)
		if !ok {
			c.add(where, "not an object")
			continue
		}
		typ, _ := m["type"].(string)
		if !blockTypes[typ] {
			c.add(where, "unknown block type %q", typ)
			continue
		}
		where += "(" + typ + ")"
		if id, has := m["block_id"]; has {
			s, _ := id.(string)
			c.id(where+".block_id", s)
			if c.blockIDs[s] {
				c.add(where+".block_id", "%q is not unique", s)
			}
			c.blockIDs[s] = true
		}
		hasInput = hasInput || typ == "input"
		c.block(where, typ, m)
	}
	return hasInput
}

func (c *checker) block(where, typ string, m map[string]any) {
	actionIDs := map[string]bool{}
	switch typ {
	case "section":
		c.section(where, m, actionIDs)
	case "actions":
		els, _ := m["elements"].([]any)
		if len(els) == 0 || len(els) > MaxActionsElements {
			c.add(where+".elements", "%d elements, need 1 to %d", len(els), MaxActionsElements)
		}
		for j, e := range els {
			c.element(fmt.Sprintf("%s.elements[%d]", where, j), e, actionTypes, actionIDs)
		}
	case "input":
		c.plainText(where+".label", m["label"], MaxLabel, true)
		c.plainText(where+".hint", m["hint"], MaxLabel, false)
		if m["element"] == nil {
			c.add(where+".element", "missing")
			return
		}
		c.element(where+".element", m["element"], inputTypes, actionIDs)
	case "header":
		c.plainText(where+".text", m["text"], MaxHeaderText, true)
	case "context":
		els, _ := m["elements"].([]any)
		if len(els) == 0 || len(els) > MaxContextElements {
			c.add(where+".elements", "%d elements, need 1 to %d", len(els), MaxContextElements)
		}
		for j, e := range els {
			c.text(fmt.Sprintf("%s.elements[%d]", where, j), e, MaxSectionText, true)
		}
	}
}

func (c *checker) section(where string, m map[string]any, actionIDs map[string]bool) {
	fields, _ := m["fields"].([]any)
	if m["text"] == nil && len(fields) == 0 {
		c.add(where, "needs text or fields")
	}
	c.text(where+".text", m["text"], MaxSectionText, false)
	if len(fields) > MaxSectionFields {
		c.add(where+".fields", "%d fields, more than %d", len(fields), MaxSectionFields)
	}
	for j, fl := range fields {
		c.text(fmt.Sprintf("%s.fields[%d]", where, j), fl, MaxFieldText, true)
	}
	if acc := m["accessory"]; acc != nil {
		c.element(where+".accessory", acc, accessoryTypes, actionIDs)
	}
}

// id checks a block_id or action_id.
func (c *checker) id(where, s string) {
	if s == "" {
		c.add(where, "empty")
	}
	c.length(where, s, MaxID)
}

// length checks an optional string's length in characters.
func (c *checker) length(where string, v any, max int) {
	if v == nil {
		return
	}
	s, ok := v.(string)
	if !ok {
		c.add(where, "not a string")
		return
	}
	if n := utf8.RuneCountInString(s); n > max {
		c.add(where, "%d characters, more than %d", n, max)
	}
}

// text checks a text object (plain_text or mrkdwn).
func (c *checker) text(where string, v any, max int, required bool) {
	if v == nil {
		if required {
			c.add(where, "missing")
		}
		return
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.add(where, "not a text object")
		return
	}
	typ, _ := m["type"].(string)
	if typ != "plain_text" && typ != "mrkdwn" {
		c.add(where, "text type %q is neither plain_text nor mrkdwn", typ)
	}
	if _, has := m["emoji"]; has && typ == "mrkdwn" {
		c.add(where, "emoji is for plain_text only")
	}
	s, _ := m["text"].(string)
	if s == "" {
		c.add(where, "empty text")
	}
	c.length(where, s, max)
}

// plainText checks a text object that must be plain_text.
func (c *checker) plainText(where string, v any, max int, required bool) {
	c.text(where, v, max, required)
	if m, ok := v.(map[string]any); ok && m["type"] != "plain_text" {
		c.add(where, "must be plain_text")
	}
}

// number reads a JSON number however it was decoded.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	case float64:
		return v, true
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	}
	return 0, false
}

// numberString reads number_input's string-typed numbers.
func numberString(v any, decimal bool) (float64, bool) {
	s, ok := v.(string)
	if !ok {
		return 0, false
	}
	if !decimal {
		n, err := strconv.ParseInt(s, 10, 64)
		return float64(n), err == nil
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func validUnix(v any) bool {
	n, ok := number(v)
	return ok && n == float64(int64(n)) && time.Unix(int64(n), 0).Year() < 10000
}
