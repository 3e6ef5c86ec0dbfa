package journeys

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcp-rounds/rounds/mcptest"
)

// authorizationRun is what the conformance suite's authorization command
// needs of an authorization server.
type authorizationRun struct {
	// Issuer is the metadata's issuer, exactly: the suite looks for the
	// metadata at /.well-known/oauth-authorization-server (then OpenID
	// Connect's) below it and compares the issuer as a string.
	Issuer string
	// ClientID is a client registered with the redirect URI
	// http://127.0.0.1:<Port>/callback that may use no secret.
	ClientID string
	// Resource, when set, is sent as RFC 8707's resource.
	Resource string
	// Port is where the suite listens for the authorization response.
	Port int
}

// runAuthorizationConformance runs both of the suite's authorization
// scenarios: the metadata (authorization-server-metadata-endpoint), then an
// authorization code grant with PKCE (authorization-code-grant), which
// needs the first's metadata and so cannot run alone. The suite prints the
// URL a person is to open; open follows it to the redirect (a browser,
// signed in, through the consent page) and the suite takes the code at
// its callback, on 127.0.0.1:Port, and redeems it.
func runAuthorizationConformance(t *testing.T, run authorizationRun, open func(url string)) map[string]scenarioResult {
	t.Helper()
	node := needAgents(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"conformance.mjs", "authorization", "--url", run.Issuer, "--client-id", run.ClientID,
		"-p", strconv.Itoa(run.Port), "-o", out}
	if run.Resource != "" {
		args = append(args, "--resource", run.Resource)
	}
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = agentsDir
	cmd.WaitDelay = 5 * time.Second
	var printed, stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The URL comes before the callback listens: open it once both are printed.
	lines := bufio.NewScanner(stdout)
	var link string
	var listening, opened bool
	for lines.Scan() {
		line := lines.Text()
		printed.WriteString(line + "\n")
		switch {
		case strings.HasPrefix(line, "Access the following URL") && lines.Scan():
			link = lines.Text()
			printed.WriteString(link + "\n")
		case strings.HasPrefix(line, "Callback server started"):
			listening = true
		}
		if link != "" && listening && !opened {
			open(link)
			opened = true
		}
	}
	err = cmd.Wait()
	printed.Write(stderr.Bytes())
	t.Logf("conformance authorization --url %s: %s", run.Issuer, time.Since(started).Round(time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("the authorization scenarios did not finish within 2 minutes:\n%s", printed.String())
	}
	results := readResults(t, out)
	if len(results) != 2 || !opened {
		t.Fatalf("the authorization scenarios left %d results, URL opened: %t (%v):\n%s", len(results), opened, err, printed.String())
	}
	return results
}

// TestAuthorizationConformance runs the suite's authorization scenarios
// against mcptest's authorization server, which approves at once: a GET
// of the printed URL takes the place of a person in a browser.
func TestAuthorizationConformance(t *testing.T) {
	t.Parallel()
	needAgents(t)
	as := mcptest.NewAuthServer(t)
	as.Set(func(as *mcptest.AuthServer) { as.CIMD = true })
	port, err := strconv.Atoi(strings.TrimPrefix(freeAddr(t), "127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	callback := fmt.Sprintf("http://127.0.0.1:%d/callback", port)
	reg, err := json.Marshal(map[string]any{"redirect_uris": []string{callback}, "application_type": "native",
		"token_endpoint_auth_method": "none", "client_name": "MCP conformance suite"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(as.URL+"/register", "application/json", bytes.NewReader(reg))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&client)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %v", resp.StatusCode, err)
	}

	results := runAuthorizationConformance(t, authorizationRun{Issuer: as.URL, ClientID: client.ClientID,
		Resource: "http://127.0.0.1/mcp", Port: port}, func(url string) {
		resp, err := http.Get(url) // follows the redirect to the suite's callback
		if err != nil {
			t.Errorf("open %s: %v", url, err)
			return
		}
		resp.Body.Close()
	})
	for _, name := range []string{"authorization-server-metadata-endpoint", "authorization-code-grant"} {
		if r := results[name]; !r.passed() || r.Passed == 0 {
			t.Errorf("%s: %d passed, failing: %s", name, r.Passed, strings.Join(r.Failures, "; "))
		}
	}
}

// TestAuthorizationConformanceRounds runs the suite's authorization
// scenarios against Rounds' own authorization server: its metadata, then a
// code grant with PKCE for the resource /mcp/demo, by a client that
// registered itself. The URL the suite prints is opened in headless
// Chromium, where a person signs in with their password and allows the
// agent on the consent page; the suite then takes the code at its
// callback and redeems it.
func TestAuthorizationConformanceRounds(t *testing.T) {
	t.Parallel()
	needAgents(t)
	chrome := newBrowser(t)
	inst := startInstance(t, newDatabase(t), map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, nil)}, nil)
	port, err := strconv.Atoi(strings.TrimPrefix(freeAddr(t), "127.0.0.1:"))
	if err != nil {
		t.Fatal(err)
	}
	status, client := register(t, inst.URL, map[string]any{"client_name": "MCP conformance suite",
		"redirect_uris": []string{fmt.Sprintf("http://127.0.0.1:%d/callback", port)}, "token_endpoint_auth_method": "none"})
	if status != http.StatusCreated {
		t.Fatalf("register: %d %v", status, client)
	}
	j := newJourneyFor(t, chrome, true, 2*time.Minute)
	results := runAuthorizationConformance(t, authorizationRun{Issuer: inst.URL, ClientID: client["client_id"].(string),
		Resource: inst.URL + "/mcp/demo", Port: port}, func(link string) {
		j.do("open the suite's link, sign in and allow the agent",
			chromedp.Navigate(link),
			chromedp.WaitVisible(chromedp.ID("username")),
			chromedp.SendKeys(chromedp.ID("username"), "admin"),
			chromedp.SendKeys(chromedp.ID("password"), adminPassword),
			chromedp.Click(chromedp.CSS(`button[data-testid="sign-in"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="consent"]`)),
			chromedp.Click(chromedp.CSS(`button[data-testid="consent-allow"]`)),
		)
		j.eventually("back at the suite's callback", `location.href.startsWith("http://127.0.0.1:`+strconv.Itoa(port)+`/callback")`, "", 30*time.Second)
	})
	for _, name := range []string{"authorization-server-metadata-endpoint", "authorization-code-grant"} {
		if r := results[name]; !r.passed() || r.Passed == 0 {
			t.Errorf("%s: %d passed, failing: %s", name, r.Passed, strings.Join(r.Failures, "; "))
		}
	}
}
