package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/store"
)

// fileEntry is one server of an mcpServers file, as Claude Desktop, Cursor
// and VS Code write it, with Rounds' own settings beside.
type fileEntry struct {
	Type    string            `json:"type"` // optional: stdio, http or streamable-http
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`

	Protocol     string `json:"protocol"`
	Sampling     bool   `json:"sampling"`
	Roots        bool   `json:"roots"`
	MaxProcesses int    `json:"maxProcesses"`
	MaxTasks     int    `json:"maxTasks"`
	// AgentQuestions says who answers the questions of calls agents start
	// (store.Server.AgentQuestions); "" leaves what the admin page set.
	AgentQuestions *string `json:"agentQuestions"`
	// Approvals are the server's approval rules (package approvals);
	// given, even as [], they replace the admin page's at each start.
	Approvals json.RawMessage `json:"approvals"`
}

// defaultMaxProcesses is how many processes of a handshake-era stdio
// server one instance runs at once, each holding one call.
const defaultMaxProcesses = 4

// localEnv are the variables of Rounds' own environment a stdio server
// gets besides its entry's env.
var localEnv = []string{"PATH", "HOME", "LANG"}

// loadServersFile reads MCP_SERVERS_FILE. Every error names the file, the
// line and the reason.
func loadServersFile(path string, getenv func(string) string) ([]ServerConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("MCP_SERVERS_FILE: %w", err)
	}
	return parseServersFile(path, data, getenv)
}

// parseServersFile reads an mcpServers file: {"mcpServers": {"name":
// {entry}, …}}, its entries in the order written.
func parseServersFile(path string, data []byte, getenv func(string) string) ([]ServerConfig, error) {
	fail := func(offset int64, format string, args ...any) error {
		return fmt.Errorf("MCP_SERVERS_FILE %s, line %d: %s", path, lineAt(data, offset), fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fail(se.Offset, "%s", se.Error())
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fail(int64(len(data)), "the file ends before its JSON does")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fail(te.Offset, "%s should be %s, not a JSON %s", or(te.Field, "the value"), jsonKind(te.Type.String()), te.Value)
		}
		return fail(dec.InputOffset(), "%s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if tok, err := dec.Token(); err != nil {
		return nil, syntax(err)
	} else if tok != json.Delim('{') {
		return nil, fail(0, `want a JSON object with "mcpServers"`)
	}
	var out []ServerConfig
	found := false
	for dec.More() {
		keyAt := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		if tok != "mcpServers" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, syntax(err)
			}
			continue
		}
		if found {
			return nil, fail(keyAt, `"mcpServers" is written twice`)
		}
		found = true
		if tok, err := dec.Token(); err != nil {
			return nil, syntax(err)
		} else if tok != json.Delim('{') {
			return nil, fail(dec.InputOffset(), `"mcpServers" should be an object of servers by name`)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, syntax(err)
			}
			name, _ := tok.(string)
			at := dec.InputOffset()
			raw := json.RawMessage{}
			if err := dec.Decode(&raw); err != nil {
				return nil, syntax(err)
			}
			entryDec := json.NewDecoder(bytes.NewReader(raw))
			entryDec.DisallowUnknownFields()
			var e fileEntry
			if err := entryDec.Decode(&e); err != nil {
				var te *json.UnmarshalTypeError
				if errors.As(err, &te) {
					return nil, fail(at+te.Offset, "server %q: %s should be %s, not a JSON %s", name, te.Field, jsonKind(te.Type.String()), te.Value)
				}
				return nil, fail(at, "server %q: %s", name, strings.TrimPrefix(err.Error(), "json: "))
			}
			sc, err := e.server(name, getenv)
			if err != nil {
				var re *approvals.RuleError
				if errors.As(err, &re) {
					entryAt := dec.InputOffset() - int64(len(raw))
					return nil, fail(entryAt+ruleOffset(raw, re.Rule), "server %q: %s", name, err)
				}
				return nil, fail(at, "server %q: %s", name, err)
			}
			if slices.ContainsFunc(out, func(s ServerConfig) bool { return s.Name == name }) {
				return nil, fail(at, "server %q is named twice", name)
			}
			out = append(out, sc)
		}
		if _, err := dec.Token(); err != nil {
			return nil, syntax(err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fail(dec.InputOffset(), "something follows the JSON object")
	}
	if !found {
		return nil, fail(0, `no "mcpServers" object`)
	}
	return out, nil
}

// server checks an entry and turns it into a server's configuration, its
// ${NAME}s taken from the environment.
func (e fileEntry) server(name string, getenv func(string) string) (ServerConfig, error) {
	sc := ServerConfig{Name: name, Protocol: mcpclient.ProtocolAuto, Sampling: e.Sampling, Roots: e.Roots}
	if !serverName.MatchString(name) {
		return sc, errors.New("a name is letters, digits, '.', '_' or '-', at most 63")
	}
	if e.Protocol != "" {
		if e.Protocol != mcpclient.ProtocolAuto && !mcpclient.KnownRevision(e.Protocol) {
			return sc, fmt.Errorf("unknown protocol %q (a revision such as %s, or auto)", e.Protocol, mcpclient.ProtocolHandshake)
		}
		sc.Protocol = e.Protocol
	}
	if e.MaxProcesses < 0 {
		return sc, errors.New("maxProcesses should be 1 or more")
	}
	if e.MaxTasks < 0 {
		return sc, errors.New("maxTasks should be 1 or more")
	}
	sc.MaxTasks = e.MaxTasks
	if e.AgentQuestions != nil {
		q := *e.AgentQuestions
		if strings.TrimSpace(q) == "" || len(q) > 200 || strings.ContainsFunc(q, unicode.IsControl) || q == store.TeamPrefix {
			return sc, errors.New(`agentQuestions should be "agent", "owner", a person's name or "team:NAME"`)
		}
		sc.AgentQuestions = q
	}
	if len(e.Approvals) > 0 && string(e.Approvals) != "null" {
		p, err := approvals.Parse(e.Approvals)
		if err != nil {
			return sc, fmt.Errorf("approvals: %w", err)
		}
		sc.Approvals = p
	}
	var missing []string
	expand := func(s string) string {
		return envRef.ReplaceAllStringFunc(s, func(ref string) string {
			v := getenv(ref[2 : len(ref)-1])
			if v == "" {
				missing = append(missing, ref)
			}
			return v
		})
	}
	switch {
	case e.Command != "" && e.URL != "":
		return sc, errors.New(`give either "command" (a local program) or "url", not both`)
	case e.Command != "":
		if e.Type != "" && e.Type != "stdio" {
			return sc, fmt.Errorf(`"type" is %q, but a server with a "command" is stdio`, e.Type)
		}
		if len(e.Headers) > 0 {
			return sc, errors.New(`"headers" are for servers with a "url"`)
		}
		local := &mcpclient.Command{Path: expand(e.Command), Dir: expand(e.Cwd)}
		for _, a := range e.Args {
			local.Args = append(local.Args, expand(a))
		}
		for _, k := range localEnv {
			if v := getenv(k); v != "" {
				local.Env = append(local.Env, k+"="+v)
			}
		}
		for _, k := range sortedKeys(e.Env) {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				return sc, fmt.Errorf("env: %q is not a variable name", k)
			}
			local.Env = append(local.Env, k+"="+expand(e.Env[k]))
		}
		sc.Command, sc.URL = local, mcpclient.LocalScheme+name
		sc.MaxProcesses = e.MaxProcesses
		if sc.MaxProcesses == 0 {
			sc.MaxProcesses = defaultMaxProcesses
		}
	case e.URL != "":
		if e.Type != "" && e.Type != "http" && e.Type != "streamable-http" {
			return sc, fmt.Errorf(`"type" is %q; Rounds speaks Streamable HTTP ("http") and stdio`, e.Type)
		}
		if len(e.Env) > 0 || e.Cwd != "" || len(e.Args) > 0 || e.MaxProcesses > 0 {
			return sc, errors.New(`"args", "env", "cwd" and "maxProcesses" are for servers with a "command"`)
		}
		sc.URL = expand(e.URL)
		u, err := url.Parse(sc.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return sc, errors.New("url should be an http or https URL")
		}
		if len(e.Headers) > 1 {
			return sc, errors.New("Rounds keeps one header per server (such as Authorization); this entry has more")
		}
		for k, v := range e.Headers {
			sc.HeaderName, sc.HeaderValue = k, expand(v)
		}
	default:
		return sc, errors.New(`give "command" (a local program) or "url"`)
	}
	if len(missing) > 0 {
		return sc, fmt.Errorf("%s is not set in Rounds' environment", strings.Join(missing, ", "))
	}
	return sc, nil
}

// ruleOffset is where the n-th rule (from 1) of an entry's "approvals"
// starts in the entry, so that an error names its line; 0 if not found.
func ruleOffset(entry json.RawMessage, n int) int64 {
	dec := json.NewDecoder(bytes.NewReader(entry))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return 0
		}
		if key != "approvals" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return 0
		}
		for range n - 1 {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return 0
			}
		}
		off := dec.InputOffset()
		rest := entry[off:]
		return off + int64(len(rest)-len(bytes.TrimLeft(rest, " \t\r\n,")))
	}
	return 0
}

// jsonKind names a Go type as the JSON it is read from.
func jsonKind(goType string) string {
	switch goType {
	case "[]string":
		return "a list of strings"
	case "map[string]string":
		return "an object of strings"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "int":
		return "a whole number"
	}
	return goType
}

// envRef is a ${NAME} in a servers file's value.
var envRef = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// lineAt is the line, from 1, of a byte offset.
func lineAt(data []byte, offset int64) int {
	offset = min(max(offset, 0), int64(len(data)))
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
