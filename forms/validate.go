package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// schemaURL names the requestedSchema inside the compiler; nothing is fetched from it.
const schemaURL = "urn:x-rounds:requested-schema"

// Validate checks content against requestedSchema and returns one human
// message per top-level property that fails ("" keys form-level problems).
// The schema is refused as New refuses it; a schema that cannot be compiled
// (invalid, or referring to anything outside itself) returns ErrSchemaUnusable.
func Validate(schema json.RawMessage, content any) (fieldErrors map[string]string, err error) {
	doc, err := decodeSchema(schema)
	if err != nil {
		return nil, err
	}
	sch, err := compile(doc)
	if err != nil {
		return nil, err
	}
	return check(sch, content)
}

// compile compiles a parsed schema (draft 2020-12 unless it says otherwise)
// with format assertions on and every URL loader refused: a $ref or $schema
// that points outside the document fails instead of reading files or the network.
// Compiled schemas are kept, keyed by their canonical JSON: every page view
// of a round would otherwise compile its schemas again. The cache is
// bounded; when full it starts over.
var compiled = struct {
	sync.Mutex
	m map[string]*jsonschema.Schema
}{m: map[string]*jsonschema.Schema{}}

const maxCompiled = 1024

func compile(doc any) (*jsonschema.Schema, error) {
	key, err := json.Marshal(doc)
	if err != nil {
		return compileNew(doc)
	}
	compiled.Lock()
	sch, ok := compiled.m[string(key)]
	compiled.Unlock()
	if ok {
		return sch, nil
	}
	sch, err = compileNew(doc)
	if err != nil {
		return nil, err
	}
	compiled.Lock()
	if len(compiled.m) >= maxCompiled {
		compiled.m = map[string]*jsonschema.Schema{}
	}
	compiled.m[string(key)] = sch
	compiled.Unlock()
	return sch, nil
}

func compileNew(doc any) (*jsonschema.Schema, error) {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoader{})
	c.UseRegexpEngine(lenientRegexp)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchemaUnusable, err)
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSchemaUnusable, err)
	}
	return sch, nil
}

type refuseLoader struct{}

func (refuseLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("loading %q is not allowed", url)
}

// lenientRegexp compiles patterns with Go's regexp; a pattern Go cannot
// compile (ECMA-only syntax such as lookahead) matches everything, leaving it
// to the browser's pattern attribute and to the server.
func lenientRegexp(s string) (jsonschema.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return matchAll(s), nil
	}
	return re, nil
}

type matchAll string

func (m matchAll) MatchString(string) bool { return true }
func (m matchAll) String() string          { return string(m) }

// check validates content (any Go value that marshals to JSON) and maps the errors.
func check(sch *jsonschema.Schema, content any) (map[string]string, error) {
	v, err := normalize(content)
	if err != nil {
		return nil, err
	}
	err = sch.Validate(v)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	out := map[string]string{}
	collect(ve, out)
	return out, nil
}

// normalize turns content into the JSON data model the validator expects
// ([]any, map[string]any, json.Number) whatever Go types the caller used.
func normalize(content any) (any, error) {
	b, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("forms: content is not JSON: %w", err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// collect walks the error tree, keeping the first message for each top-level property.
func collect(ve *jsonschema.ValidationError, out map[string]string) {
	add := func(key, msg string) {
		if _, ok := out[key]; !ok {
			out[key] = msg
		}
	}
	key := ""
	if len(ve.InstanceLocation) > 0 {
		key = ve.InstanceLocation[0]
	}
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		if len(ve.InstanceLocation) == 0 {
			for _, name := range k.Missing {
				add(name, "Answer this question")
			}
			return
		}
		add(key, "Fill in every part of this answer")
		return
	case *kind.OneOf, *kind.AnyOf:
		if onlyConstFailures(ve) {
			add(key, "Choose one of the offered options")
		} else {
			add(key, "Not an answer the server accepts")
		}
		return
	}
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			collect(c, out)
		}
		return
	}
	add(key, message(ve))
}

// onlyConstFailures reports whether a oneOf/anyOf failed only on const or
// enum keywords: a choice among offered options.
func onlyConstFailures(ve *jsonschema.ValidationError) bool {
	if len(ve.Causes) == 0 {
		switch ve.ErrorKind.(type) {
		case *kind.Const, *kind.Enum:
			return true
		case *kind.OneOf:
			return false // matched more than one option
		}
		return false
	}
	for _, c := range ve.Causes {
		if !onlyConstFailures(c) {
			return false
		}
	}
	return true
}

// message is the sentence shown beside a field for one failed keyword.
func message(ve *jsonschema.ValidationError) string {
	nested := len(ve.InstanceLocation) > 1
	switch k := ve.ErrorKind.(type) {
	case *kind.Type:
		for _, w := range k.Want {
			switch w {
			case "integer":
				return "Enter a whole number"
			case "number":
				return "Enter a number"
			case "string":
				return "Enter text"
			case "boolean":
				return "Enter true or false"
			case "array":
				return "Enter a list"
			case "object":
				return "Enter a JSON object"
			}
		}
		return "Not the kind of answer the server expects"
	case *kind.Enum, *kind.Const:
		if nested && isIndex(ve.InstanceLocation[1]) {
			return "Choose only the offered options"
		}
		return "Choose one of the offered options"
	case *kind.MinLength:
		return fmt.Sprintf("Must be at least %d %s", k.Want, plural(k.Want, "character", "characters"))
	case *kind.MaxLength:
		return fmt.Sprintf("Must be at most %d %s", k.Want, plural(k.Want, "character", "characters"))
	case *kind.Pattern:
		return "Not in the expected format"
	case *kind.Format:
		switch k.Want {
		case "email":
			return "Enter an email address"
		case "uri", "iri":
			return "Enter a full web address, like https://example.com"
		case "date":
			return "Enter a date"
		case "date-time":
			return "Enter a date and time"
		}
		return "Not in the expected format"
	case *kind.Minimum:
		return "Must be at least " + ratString(k.Want)
	case *kind.Maximum:
		return "Must be at most " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "Must be more than " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "Must be less than " + ratString(k.Want)
	case *kind.MultipleOf:
		return "Must be a multiple of " + ratString(k.Want)
	case *kind.MinItems:
		if k.Want == 1 {
			return "Choose at least one"
		}
		return fmt.Sprintf("Choose at least %d", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("Choose at most %d", k.Want)
	case *kind.UniqueItems:
		return "Choose each option only once"
	case *kind.AdditionalProperties:
		if len(ve.InstanceLocation) == 0 {
			return "The server does not accept answers to questions it did not ask"
		}
		return "Contains parts the server does not accept"
	case *kind.MinProperties:
		return fmt.Sprintf("Answer at least %d %s", k.Want, plural(k.Want, "question", "questions"))
	case *kind.MaxProperties:
		return fmt.Sprintf("Answer at most %d %s", k.Want, plural(k.Want, "question", "questions"))
	case *kind.FalseSchema:
		return "The server does not accept an answer here"
	}
	return "Not an answer the server accepts"
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ratString formats a schema bound for people: "18", "0.5".
func ratString(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return strconv.FormatFloat(f, 'f', -1, 64)
}
