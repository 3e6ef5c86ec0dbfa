package mcpclient

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// ParamHeaders mirrors the tool arguments whose schema property carries
// x-mcp-header into Mcp-Param-{Name} headers, as the 2026-07-28 transport
// asks: only properties reached from the root through "properties" alone,
// strings as they are, integers in decimal, booleans as true/false; a
// missing or null value gets no header; a value that is not plain visible
// ASCII (or has spaces at either end, or looks like the sentinel) is sent
// as =?base64?…?=. Tools whose annotations break the rules never get here:
// listing drops them.
func ParamHeaders(inputSchema any, arguments json.RawMessage) http.Header {
	schema, ok := asMap(inputSchema)
	if !ok {
		return nil
	}
	var args map[string]any
	dec := json.NewDecoder(strings.NewReader(string(arguments)))
	dec.UseNumber()
	if dec.Decode(&args) != nil {
		return nil
	}
	out := http.Header{}
	var walk func(schema map[string]any, args map[string]any)
	walk = func(schema map[string]any, args map[string]any) {
		props, _ := asMap(schema["properties"])
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			prop, ok := asMap(props[k])
			if !ok {
				continue
			}
			value, present := args[k]
			if name, ok := prop["x-mcp-header"].(string); ok && name != "" && present && value != nil {
				if v, ok := headerValue(value); ok {
					out.Set("Mcp-Param-"+name, v)
				}
			}
			if nested, ok := value.(map[string]any); ok {
				walk(prop, nested)
			}
		}
	}
	walk(schema, args)
	if len(out) == 0 {
		return nil
	}
	return out
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case json.RawMessage:
		var out map[string]any
		return out, json.Unmarshal(m, &out) == nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out) == nil
}

// headerValue turns a primitive argument into a header value.
func headerValue(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			return "", false
		}
		s = strconv.FormatInt(n, 10)
	default:
		return "", false
	}
	return EncodeHeaderValue(s), true
}

// EncodeHeaderValue is the transport's value encoding: the value as it is
// when it is plain visible ASCII (spaces inside allowed), else its UTF-8
// bytes in base64 between =?base64? and ?=.
func EncodeHeaderValue(s string) string {
	plain := s == strings.TrimSpace(s) && !(strings.HasPrefix(s, "=?base64?") && strings.HasSuffix(s, "?="))
	for i := 0; plain && i < len(s); i++ {
		plain = s[i] >= 0x20 && s[i] <= 0x7e
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}
