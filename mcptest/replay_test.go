package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The recorded transcripts (testdata/wire) are sent to a Fake request by
// request, as Rounds sent them, and everything the Fake answers is held
// against what the real server answered: status, header names and values,
// JSON or SSE with CRLF framing, bodies byte for byte with their key order,
// ids and error texts, and when each stream ends. Volatile values (session
// ids, sealed request states, Rounds' request ids, dates) are matched by
// their placeholders.

// step is one exchange of a transcript.
type step struct {
	kind   string // "request", "response", "event", "end"
	n      int    // the request it belongs to
	method string // the request's HTTP method
	status int    // the response's status
	sse    bool   // the response opens an SSE stream
	header []string
	body   string // compact JSON; "" for none, "*" for a body the transcript elides
}

var (
	headingRe  = regexp.MustCompile(`^### \d+\. (.*)$`)
	requestRe  = regexp.MustCompile(`^Rounds → server: request #(\d+), (\w+) /mcp`)
	responseRe = regexp.MustCompile(`^server → Rounds: response to #(\d+), HTTP (\d+)(, SSE stream opens)?`)
	eventRe    = regexp.MustCompile(`^server → Rounds: SSE event on the stream of #(\d+)`)
	endRe      = regexp.MustCompile(`^SSE stream of #(\d+) ends`)
)

// parseTranscript reads the exchanges of a transcript in the order the
// recording proxy saw them.
func parseTranscript(t *testing.T, text string) []step {
	t.Helper()
	_, exchanges, ok := strings.Cut(text, "## Exchanges")
	if !ok {
		t.Fatal("no exchanges")
	}
	var steps []step
	for _, section := range strings.Split(exchanges, "\n### ")[1:] {
		section = "### " + section
		title, rest, _ := strings.Cut(section, "\n")
		h := headingRe.FindStringSubmatch(title)[1]
		var s step
		switch {
		case requestRe.MatchString(h):
			m := requestRe.FindStringSubmatch(h)
			s = step{kind: "request", method: m[2]}
			s.n, _ = strconv.Atoi(m[1])
		case responseRe.MatchString(h):
			m := responseRe.FindStringSubmatch(h)
			s = step{kind: "response", sse: m[3] != ""}
			s.n, _ = strconv.Atoi(m[1])
			s.status, _ = strconv.Atoi(m[2])
		case eventRe.MatchString(h):
			s = step{kind: "event"}
			s.n, _ = strconv.Atoi(eventRe.FindStringSubmatch(h)[1])
		case endRe.MatchString(h):
			s = step{kind: "end"}
			s.n, _ = strconv.Atoi(endRe.FindStringSubmatch(h)[1])
		default:
			t.Fatalf("unknown exchange %q", h)
		}
		for _, block := range strings.Split(rest, "```")[1:] {
			lang, content, _ := strings.Cut(block, "\n")
			switch lang {
			case "http":
				head, _, _ := strings.Cut(strings.TrimSpace(content), "\n\n")
				s.header = strings.Split(head, "\n")[1:]
			case "json":
				var buf bytes.Buffer
				if err := json.Compact(&buf, []byte(content)); err != nil {
					t.Fatalf("%s: %v", h, err)
				}
				s.body = buf.String()
			case "text":
				if s.kind == "response" && strings.HasPrefix(content, "(the ") {
					s.body = "*"
				}
			}
		}
		steps = append(steps, s)
	}
	return steps
}

// placeholders turns the volatile values of a real exchange into the
// transcript's placeholders, numbering each kind in order of appearance.
type placeholders struct {
	seen map[string]string
	n    map[string]int
}

var (
	stateRe   = regexp.MustCompile(`v1\.[A-Za-z0-9_-]{40,}`)
	roundsRe  = regexp.MustCompile(`rounds-[0-9a-f]{24}`)
	sessionRe = regexp.MustCompile(`\b[0-9a-f]{32}\b`)
)

func (p *placeholders) name(kind, value string) string {
	if name, ok := p.seen[value]; ok {
		return name
	}
	p.n[kind]++
	name := fmt.Sprintf(kind, p.n[kind])
	p.seen[value] = name
	return name
}

func (p *placeholders) hide(s string) string {
	s = stateRe.ReplaceAllStringFunc(s, func(v string) string { return p.name("v1.<opaque-request-state-%d>", v) })
	s = roundsRe.ReplaceAllStringFunc(s, func(v string) string { return p.name("rounds-<random-hex-%d>", v) })
	return sessionRe.ReplaceAllStringFunc(s, func(v string) string { return p.name("<session-id-%d>", v) })
}

// show puts the real values back into what the transcript sent.
func (p *placeholders) show(s string) string {
	for value, name := range p.seen {
		s = strings.ReplaceAll(s, name, value)
	}
	return strings.NewReplacer(
		"rounds-<random-hex-1>", "rounds-000000000000000000000001",
		"rounds-<random-hex-2>", "rounds-000000000000000000000002",
		"rounds-<random-hex-3>", "rounds-000000000000000000000003",
	).Replace(s)
}

// stream reads the SSE events of one response as they come.
type stream struct {
	events chan string // each event's data; closed when the stream ends
	framed chan error  // a framing the real server never used
}

func readStream(body io.ReadCloser) *stream {
	s := &stream{events: make(chan string, 16), framed: make(chan error, 16)}
	go func() {
		defer close(s.events)
		defer body.Close()
		r := bufio.NewReader(body)
		for {
			event, err := r.ReadString('\n')
			if err != nil {
				return
			}
			data, _ := r.ReadString('\n')
			blank, _ := r.ReadString('\n')
			if event != "event: message\r\n" || !strings.HasPrefix(data, "data: ") || !strings.HasSuffix(data, "\r\n") || blank != "\r\n" {
				s.framed <- fmt.Errorf("event framed as %q %q %q", event, data, blank)
			}
			s.events <- strings.TrimSuffix(strings.TrimPrefix(data, "data: "), "\r\n")
		}
	}()
	return s
}

func TestFakesReplayTranscripts(t *testing.T) {
	files, err := filepath.Glob("testdata/wire/*-*.md")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".md")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			flavour := FastMCP4
			switch {
			case strings.HasPrefix(name, "mcp-2.0.0"):
				flavour = PythonSDK2
			case strings.HasPrefix(name, "mcp-1.29.0"):
				flavour = PythonSDK1
			}
			replay(t, NewFake(t, flavour), parseTranscript(t, string(text)))
		})
	}
}

func replay(t *testing.T, f *Fake, steps []step) {
	t.Helper()
	p := &placeholders{seen: map[string]string{}, n: map[string]int{}}
	client := &http.Client{Timeout: time.Minute}
	responses := map[int]*http.Response{}
	streams := map[int]*stream{}
	for i, s := range steps {
		switch s.kind {
		case "request":
			req, err := http.NewRequest(s.method, f.URL, strings.NewReader(p.show(s.body)))
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range s.header {
				k, v, _ := strings.Cut(line, ": ")
				req.Header.Set(k, p.show(v))
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("request #%d: %v", s.n, err)
			}
			responses[s.n] = resp
		case "response":
			resp := responses[s.n]
			if resp.StatusCode != s.status {
				t.Errorf("response to #%d: HTTP %d, want %d", s.n, resp.StatusCode, s.status)
			}
			var got []string
			for k, vs := range resp.Header {
				if k != "Date" {
					got = append(got, k+": "+p.hide(strings.Join(vs, ", ")))
				}
			}
			if resp.ContentLength >= 0 && resp.Header.Get("Content-Length") == "" && !s.sse {
				got = append(got, "Content-Length: "+strconv.FormatInt(resp.ContentLength, 10))
			}
			var want []string
			for _, line := range s.header {
				if !strings.HasPrefix(line, "Date: ") {
					want = append(want, line)
				}
			}
			if s.sse {
				streams[s.n] = readStream(resp.Body)
			} else {
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				hidden := p.hide(string(body))
				if s.body != "*" && hidden != s.body {
					t.Errorf("response to #%d:\n got %s\nwant %s", s.n, hidden, s.body)
				}
				if hidden != string(body) || s.body == "*" {
					// Its length depends on the volatile values.
					got, want = withoutLength(got), withoutLength(want)
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("response to #%d: headers\n got %q\nwant %q", s.n, got, want)
			}
		case "event":
			select {
			case data, ok := <-streams[s.n].events:
				if got := p.hide(data); !ok || got != s.body {
					t.Errorf("step %d, event on #%d:\n got %s\nwant %s", i+1, s.n, got, s.body)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("step %d: no event on the stream of #%d", i+1, s.n)
			}
		case "end":
			select {
			case data, ok := <-streams[s.n].events:
				if ok {
					t.Errorf("stream of #%d sent %s, want it ended", s.n, data)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("the stream of #%d did not end", s.n)
			}
		}
	}
	for n, s := range streams {
		select {
		case err := <-s.framed:
			t.Errorf("stream of #%d: %v", n, err)
		default:
		}
	}
}

func withoutLength(lines []string) []string {
	return slices.DeleteFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Content-Length: ") })
}
