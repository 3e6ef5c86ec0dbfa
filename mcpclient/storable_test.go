package mcpclient_test

import (
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
)

func TestUnstorableEscape(t *testing.T) {
	for name, tc := range map[string]struct {
		json string
		bad  bool
	}{
		"OK":                    {`{"a":"plain é \u00e9 \n"}`, false},
		"OKPair":                {`{"a":"\ud83d\ude00"}`, false},
		"OKEscapedBackslash":    {`{"a":"C:\\u0000"}`, false},
		"OKBackslashThenPair":   {`{"a":"\\\ud83d\ude00"}`, false},
		"ErrNUL":                {`{"a":"x\u0000"}`, true},
		"ErrNULInKey":           {`{"\u0000":1}`, true},
		"ErrNULAfterBackslash":  {`{"a":"\\\u0000"}`, true},
		"ErrRawNUL":             {"{\"a\":\"x\x00\"}", true},
		"ErrLoneHigh":           {`{"a":"\ud800"}`, true},
		"ErrHighThenNotLow":     {`{"a":"\ud800\u0041"}`, true},
		"ErrLoneLow":            {`{"a":"\udc00x"}`, true},
		"ErrUpperCaseSurrogate": {`{"a":"\uD800"}`, true},
	} {
		t.Run(name, func(t *testing.T) {
			if got := mcpclient.UnstorableEscape([]byte(tc.json)) != ""; got != tc.bad {
				t.Errorf("UnstorableEscape(%s) refuses = %v, want %v", tc.json, got, tc.bad)
			}
		})
	}
}
