package forms

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Limits on what a server (or a crafted POST) can make us parse.
const (
	MaxSchemaBytes = 256 << 10 // largest requestedSchema, and largest JSON answer typed in a textarea
	MaxDepth       = 32        // deepest nesting of objects and arrays
	MaxFields      = 200       // most properties in one requestedSchema

	// maxNumberLen and maxExponent keep every JSON number small enough for the
	// validator's big.Rat arithmetic: "1e1000000" is valid JSON but costs ~20ms each.
	maxNumberLen = 128
	maxExponent  = 400
)

// Errors for schemas New and Validate refuse outright.
var (
	ErrSchemaTooLarge  = errors.New("forms: schema larger than 256 KiB")
	ErrSchemaTooDeep   = errors.New("forms: schema nested deeper than 32 levels")
	ErrSchemaMalformed = errors.New("forms: schema is not valid JSON")
	ErrTooManyFields   = errors.New("forms: schema has more than 200 properties")
	ErrNoSchema        = errors.New("forms: no schema")
	ErrSchemaUnusable  = errors.New("forms: schema cannot be compiled")
)

// Errors from decodeJSON, mapped by callers to their own vocabulary.
var (
	errTooLarge  = errors.New("too large")
	errTooDeep   = errors.New("nested too deeply")
	errBadNumber = errors.New("number out of range")
)

// decodeJSON parses one JSON value, numbers as json.Number, refusing input
// larger than maxBytes, nested deeper than MaxDepth, or with numbers too long
// or with too large an exponent. The nesting is checked on the token stream
// before anything is unmarshalled into memory.
func decodeJSON(data []byte, maxBytes int) (any, error) {
	if len(data) > maxBytes {
		return nil, errTooLarge
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '{' || t == '[' {
				depth++
				if depth > MaxDepth {
					return nil, errTooDeep
				}
			} else {
				depth--
			}
		case json.Number:
			if !numberInRange(string(t)) {
				return nil, errBadNumber
			}
		}
		if depth == 0 {
			break
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	dec = json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// numberInRange reports whether a JSON number literal is short and its
// exponent small.
func numberInRange(s string) bool {
	if len(s) > maxNumberLen {
		return false
	}
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return true
	}
	exp := strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")
	if len(exp) > 4 {
		return false
	}
	n, err := strconv.Atoi("0" + exp)
	return err == nil && n <= maxExponent
}

// decodeSchema parses a requestedSchema with the limits, mapping failures to
// the exported errors.
func decodeSchema(schema []byte) (any, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, ErrNoSchema
	}
	doc, err := decodeJSON(schema, MaxSchemaBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return nil, ErrSchemaTooLarge
	case errors.Is(err, errTooDeep):
		return nil, ErrSchemaTooDeep
	case err != nil:
		return nil, fmt.Errorf("%w: %v", ErrSchemaMalformed, err)
	case doc == nil:
		return nil, ErrNoSchema
	}
	if top, ok := doc.(map[string]any); ok {
		if props, ok := top["properties"].(map[string]any); ok && len(props) > MaxFields {
			return nil, ErrTooManyFields
		}
	}
	return doc, nil
}
