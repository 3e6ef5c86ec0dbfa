package main

import (
	"reflect"
	"testing"
)

func TestParseServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want []serverConfig
		err  bool
	}{
		{"OK", "demo=http://127.0.0.1:8090/mcp, other=https://mcp.test/x",
			[]serverConfig{{"demo", "http://127.0.0.1:8090/mcp", "auto"}, {"other", "https://mcp.test/x", "auto"}}, false},
		{"OKPinned", "old[2025-11-25]=http://a.test/mcp,new=http://b.test/mcp",
			[]serverConfig{{"old", "http://a.test/mcp", "2025-11-25"}, {"new", "http://b.test/mcp", "auto"}}, false},
		{"ErrUnknownFlag", "x[teleport]=http://a.test/", nil, true},
		{"ErrScheme", "x=ftp://a.test/", nil, true},
		{"ErrName", "bad name=http://a.test/", nil, true},
		{"ErrNoURL", "justaname", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseServers(tc.in)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error: %t", err, tc.err)
			}
			if !tc.err && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
