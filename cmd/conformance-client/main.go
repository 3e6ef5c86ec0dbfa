// Command conformance-client drives Rounds' own MCP client (mcpclient) and
// OAuth client (mcpauth) through one client scenario of the MCP
// conformance suite: the suite starts a scenario server and runs this
// command with the server's URL as its last argument, the scenario's name
// in MCP_CONFORMANCE_SCENARIO and any extra data (a pre-registered client,
// say) as JSON in MCP_CONFORMANCE_CONTEXT.
//
// It does what the product does with a server: list the tools (keeping
// each as it was sent), call them with their x-mcp-header arguments
// mirrored into Mcp-Param-* headers, and when the server asks for a
// sign-in, discover, register, send a person to the authorization page and
// trade the code for tokens — the person being this command itself, a
// headless user agent that follows the authorization server's redirect
// back to Rounds' callback. The steps are mcpauth's, in the order the web
// handlers take them (handlers/oauth_connect.go, handlers/oauth_callback.go).
//
// See the README's "Servers that need sign-in" for how to run the suite.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-rounds/rounds/mcpauth"
	"github.com/mcp-rounds/rounds/mcpclient"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: conformance-client <server-url>")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[len(os.Args)-1], os.Getenv("MCP_CONFORMANCE_SCENARIO"), os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-client:", err)
		os.Exit(1)
	}
}

// scenarioContext is what some scenarios pass in MCP_CONFORMANCE_CONTEXT.
type scenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	// ToolCalls are the calls to make, when the scenario names them.
	ToolCalls []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"toolCalls"`
}

// call is one tools/call to make.
type call struct {
	name string
	args json.RawMessage
}

func run(ctx context.Context, serverURL, scenario, rawContext string) error {
	var sc scenarioContext
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &sc); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	// Rounds' public address, on loopback: its Client ID Metadata Document
	// is served here, as the web app serves it under PUBLIC_URL.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	auth := &mcpauth.Client{HTTP: mcpauth.NewHTTPClient(10 * time.Second), PublicURL: "http://localhost:" + portOf(l)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /oauth/client-metadata.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(auth.ClientMetadata())
	})
	go func() { _ = http.Serve(l, mux) }()

	r := &runner{
		mcp:  mcpclient.New(mcpclient.Options{Name: "rounds-conformance", Version: "1"}),
		auth: auth,
		srv:  mcpclient.Server{URL: serverURL},
	}
	if sc.ClientID != "" {
		r.pre = &mcpauth.Registration{ClientID: sc.ClientID, ClientSecret: sc.ClientSecret, AuthMethod: "client_secret_basic"}
		if sc.ClientSecret == "" {
			r.pre.AuthMethod = "none"
		}
	}
	if scenario == "sse-retry" || strings.HasPrefix(scenario, "elicitation") {
		// A held 2025-11-25 session, as the engine opens for a call.
		r.srv.Held = &mcpclient.Held{Ask: func(ctx context.Context, q mcpclient.Question) (json.RawMessage, error) {
			return json.RawMessage(`{"action":"decline"}`), nil
		}}
	}

	var tools *mcpclient.Tools
	if err := r.authorized(ctx, func() (err error) {
		tools, err = r.mcp.ListTools(ctx, r.srv)
		return err
	}); err != nil {
		return fmt.Errorf("listing tools: %w", err)
	}
	fmt.Printf("tools (%s):", tools.Protocol)
	for _, t := range tools.Tools {
		fmt.Printf(" %s", t.Name)
	}
	fmt.Println()
	var calls []call
	for _, tc := range sc.ToolCalls {
		calls = append(calls, call{tc.Name, tc.Arguments})
	}
	if len(calls) == 0 {
		for _, t := range tools.Tools {
			calls = append(calls, call{t.Name, arguments(tools, t.Name)})
		}
	}
	for _, c := range calls {
		if err := r.authorized(ctx, func() error {
			srv := r.srv
			// As the engine does: the schema as listed says which
			// arguments travel as Mcp-Param-* headers too.
			if ph := mcpclient.ParamHeaders(schemaOf(tools.Raw[c.name]), c.args); ph != nil {
				srv.Header = ph
			}
			out, err := r.mcp.Send(ctx, srv, mcpclient.Request{Method: mcpclient.MethodCallTool, Name: c.name, Arguments: c.args}, nil)
			if err == nil {
				fmt.Printf("%s → %s\n", c.name, out.Result)
			}
			return err
		}); err != nil {
			return fmt.Errorf("calling %s: %w", c.name, err)
		}
	}
	return nil
}

func portOf(l net.Listener) string {
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

func schemaOf(rawTool json.RawMessage) json.RawMessage {
	var t struct {
		InputSchema json.RawMessage `json:"inputSchema"`
	}
	_ = json.Unmarshal(rawTool, &t)
	return t.InputSchema
}

// arguments makes up a value for each property of a tool's input schema
// (its default or example when it has one), as a person filling in the
// call form would. An object property named schema gets another tool's
// inputSchema exactly as the server listed it: the suite's echo tool, which
// shows what the client kept of a schema.
func arguments(tools *mcpclient.Tools, name string) json.RawMessage {
	var t struct {
		InputSchema struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"inputSchema"`
	}
	_ = json.Unmarshal(tools.Raw[name], &t)
	args := map[string]any{}
	for prop, p := range t.InputSchema.Properties {
		if v, ok := p["default"]; ok {
			args[prop] = v
			continue
		}
		if ex, ok := p["examples"].([]any); ok && len(ex) > 0 {
			args[prop] = ex[0]
			continue
		}
		switch p["type"] {
		case "string":
			args[prop] = "value"
		case "integer", "number":
			args[prop] = 42
		case "boolean":
			args[prop] = true
		case "object":
			args[prop] = map[string]any{}
			if prop == "schema" {
				for _, other := range tools.Tools {
					if other.Name != name {
						args[prop] = schemaOf(tools.Raw[other.Name])
						break
					}
				}
			}
		case "array":
			args[prop] = []any{}
		}
	}
	b, _ := json.Marshal(args)
	return b
}

// runner holds one person's connection to the scenario's server: the
// access token and what was granted, as the store keeps them.
type runner struct {
	mcp  *mcpclient.Client
	auth *mcpauth.Client
	srv  mcpclient.Server
	pre  *mcpauth.Registration
	// known is a dynamic registration kept from before, by issuer.
	known   map[string]*mcpauth.Registration
	issuer  string
	granted string
}

// maxAuthorizations bounds the sign-ins one operation may ask for, so a
// server that keeps asking for more scopes does not loop for ever.
const maxAuthorizations = 3

// authorized runs op, signing in when the server asks (401) or asks for
// more scopes (403 insufficient_scope), and runs it again.
func (r *runner) authorized(ctx context.Context, op func() error) error {
	for n := 0; ; n++ {
		err := op()
		var ae *mcpclient.AuthRequiredError
		if !errors.As(err, &ae) {
			return err
		}
		if n >= maxAuthorizations {
			return fmt.Errorf("the server still refuses after %d sign-ins: %w", n, err)
		}
		fmt.Printf("sign-in asked (%d, scope %q, metadata %q)\n", ae.Status, ae.Scope, ae.ResourceMetadata)
		if err := r.signIn(ctx, ae); err != nil {
			return err
		}
	}
}

// signIn is GET /servers/{name}/connect followed by /oauth/callback.
func (r *runner) signIn(ctx context.Context, ae *mcpclient.AuthRequiredError) error {
	target, err := r.auth.Discover(ctx, r.srv.URL, ae.ResourceMetadata)
	if err != nil {
		return err
	}
	if r.known == nil {
		r.known = map[string]*mcpauth.Registration{}
	}
	reg, err := r.auth.Register(ctx, target, r.pre, r.known[target.AS.Issuer])
	if err != nil {
		return err
	}
	if reg.Dynamic {
		kept := *reg
		kept.Dynamic = false
		r.known[target.AS.Issuer] = &kept
	}
	scope := mcpauth.Scope(target, ae.Scope)
	if r.issuer == target.AS.Issuer {
		scope = union(r.granted, scope) // a step-up keeps what was granted
	}
	state, verifier := oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	authURL := r.auth.AuthCodeURL(target, *reg, scope, state, verifier)

	back, err := userAgent(ctx, authURL, r.auth.RedirectURI())
	if err != nil {
		return err
	}
	q := back.Query()
	if q.Get("state") != state {
		return errors.New("the sign-in came back with a state that does not match the one sent")
	}
	if err := mcpauth.CheckIssuer(q, target.AS.Issuer, target.AS.AuthorizationResponseIssParameterSupported); err != nil {
		return err
	}
	if e := q.Get("error"); e != "" {
		return fmt.Errorf("the authorization server did not grant access (%s)", e)
	}
	toks, err := r.auth.Exchange(ctx, target.AS.TokenEndpoint, *reg, q.Get("code"), verifier, target.Resource)
	if err != nil {
		return err
	}
	r.srv.Token, r.issuer, r.granted = toks.Access, target.AS.Issuer, cmp(toks.Scope, scope)
	fmt.Printf("connected at %s (scope %q)\n", target.AS.Issuer, r.granted)
	return nil
}

// userAgent opens the authorization page as a browser would and follows
// its redirects until one leads to Rounds' callback, which it returns.
func userAgent(ctx context.Context, authURL, callback string) (*url.URL, error) {
	hc := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	next := authURL
	for range 10 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, next, nil)
		if err != nil {
			return nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return nil, fmt.Errorf("the authorization page could not be opened: %w", err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return nil, fmt.Errorf("the authorization page answered %d without sending the person back", resp.StatusCode)
		}
		if strings.HasPrefix(loc.String(), callback+"?") || loc.String() == callback {
			return loc, nil
		}
		next = loc.String()
	}
	return nil, errors.New("the authorization page redirected too many times")
}

func union(a, b string) string {
	out := strings.Fields(a)
	for _, s := range strings.Fields(b) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
