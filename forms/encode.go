package forms

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/mcp-rounds/rounds/mcpclient"
)

// Encode writes decoded content as a JSON object whose members follow the
// schema's properties in the order the server wrote them (any others come
// after, sorted), so the server reads its answers in its own order.
func (f *Form) Encode(content map[string]any) (json.RawMessage, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	write := func(name string) error {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		key, err := mcpclient.MarshalRaw(name)
		if err != nil {
			return err
		}
		value, err := mcpclient.MarshalRaw(content[name])
		if err != nil {
			return err
		}
		buf.Write(key)
		buf.WriteByte(':')
		buf.Write(value)
		return nil
	}
	done := map[string]bool{}
	for _, name := range f.order {
		if _, ok := content[name]; ok && !done[name] {
			done[name] = true
			if err := write(name); err != nil {
				return nil, err
			}
		}
	}
	var rest []string
	for name := range content {
		if !done[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		if err := write(name); err != nil {
			return nil, err
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// LabelLoneValue labels a form of one untitled property named "value" with
// the question itself: FastMCP asks for a lone str, int, bool or choice as
// {"value": …}, titled "Value" or not at all, and "Value" tells the person
// nothing the question does not say better.
func (f *Form) LabelLoneValue(question string) {
	if len(f.Fields) != 1 || strings.TrimSpace(question) == "" {
		return
	}
	fd := &f.Fields[0]
	if fd.Name == "value" && strings.EqualFold(fd.Label, "value") {
		fd.Label = question
	}
}
