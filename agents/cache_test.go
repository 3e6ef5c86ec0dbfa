package agents

import "testing"

// A server's result lacking what a 2026-07-28 result needs gets it put
// in front, the rest byte for byte; what the server gave stays its own.
func TestFillResult(t *testing.T) {
	for _, c := range []struct {
		in        string
		cacheable bool
		want      string
	}{
		{`{"contents":[{"uri":"a://b", "text":"x"}]}`, true,
			`{"resultType":"complete","ttlMs":0,"cacheScope":"private","contents":[{"uri":"a://b", "text":"x"}]}`},
		{` {}`, true, ` {"resultType":"complete","ttlMs":0,"cacheScope":"private"}`},
		{`{"resultType":"complete","ttlMs":5000,"cacheScope":"public","contents":[]}`, true,
			`{"resultType":"complete","ttlMs":5000,"cacheScope":"public","contents":[]}`},
		{`{"content":[] ,"isError":false}`, false, `{"resultType":"complete","content":[] ,"isError":false}`},
		{`{"resultType":"input_required","ttlMs":1}`, true, `{"resultType":"input_required","ttlMs":1}`},
		{`[1]`, true, `[1]`},
	} {
		if got := string(fillResult([]byte(c.in), c.cacheable)); got != c.want {
			t.Errorf("fillResult(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
