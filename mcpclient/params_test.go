package mcpclient

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestEncodeHeaderValue checks the transport page's encoding examples.
func TestEncodeHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":           "us-west1",
		"Hello, 世界":          "=?base64?SGVsbG8sIOS4lueVjA==?=",
		" padded ":           "=?base64?IHBhZGRlZCA=?=",
		"line1\nline2":       "=?base64?bGluZTEKbGluZTI=?=",
		"=?base64?literal?=": "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
	} {
		if got := EncodeHeaderValue(in); got != want {
			t.Errorf("EncodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParamHeaders(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{
		"region":{"type":"string","x-mcp-header":"Region"},
		"count":{"type":"integer","x-mcp-header":"Count"},
		"dry":{"type":"boolean","x-mcp-header":"Dry-Run"},
		"gone":{"type":"string","x-mcp-header":"Gone"},
		"opts":{"type":"object","properties":{"tenant":{"type":"string","x-mcp-header":"Tenant"}}},
		"query":{"type":"string"}}}`)
	got := ParamHeaders(schema, json.RawMessage(`{"region":"us-west1","count":42,"dry":false,"gone":null,
		"opts":{"tenant":"Zürich"},"query":"select 1"}`))
	want := http.Header{"Mcp-Param-Region": {"us-west1"}, "Mcp-Param-Count": {"42"}, "Mcp-Param-Dry-Run": {"false"},
		"Mcp-Param-Tenant": {"=?base64?WsO8cmljaA==?="}}
	if len(got) != len(want) {
		t.Fatalf("headers = %v, want %v", got, want)
	}
	for k, v := range want {
		if got.Get(k) != v[0] {
			t.Errorf("%s = %q, want %q", k, got.Get(k), v[0])
		}
	}
	if h := ParamHeaders(schema, json.RawMessage(`{"query":"x"}`)); h != nil {
		t.Errorf("no marked argument given: %v, want none", h)
	}
}
