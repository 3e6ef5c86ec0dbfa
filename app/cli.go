package app

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-rounds/rounds/approvals"
	"github.com/mcp-rounds/rounds/store"
)

const usage = `usage:
  web                                   run the server
  web user add [--admin] [--email ADDRESS] NAME
                                        add a user; the password is read from standard input
  web user email NAME ADDRESS           set a user's e-mail address ('' removes it)
  web team add NAME                     add a team (calls name it as team:NAME)
  web team member add TEAM USER         add a user to a team
  web team list                         list teams and their members
  web team channel TEAM CHANNEL_ID      post the team's rounds to this Slack channel ('' stops)
  web user password NAME                set a new password for NAME (a lost admin's too), read from standard input
  web user list                         list users
  web user disable NAME                 stop a user from signing in (an identity provider cannot enable them again)
  web token create NAME                 make an API token for user NAME (printed last)
  web scim token create NAME            make a provisioning (SCIM) token for an identity provider (printed last)
  web scim token list                   list provisioning tokens: name, made, last used, revoked
  web scim token revoke NAME            revoke a provisioning token: it gets 401 at once, on every instance
  web server add NAME URL [--header 'Authorization: Bearer …' | --header -] [--agent-questions WHO] [--approvals RULES]
                                        register an MCP server, with optional credentials
                                        (-: the header on standard input, out of the process list);
                                        WHO answers agents' questions: agent, owner, a name or team:NAME;
                                        RULES are its approval rules, a JSON list or a file holding one
  web healthcheck                       exit 0 if the instance on LISTEN_ADDR is up`

// Command runs a management command (args without the program's name)
// against the database in DATABASE_URL, or asks whether the instance on
// LISTEN_ADDR is up. It reads only the settings it needs (where the
// database is; CREDENTIALS_KEY where it stores credentials), so that a
// setting the server would refuse does not stand in the way of the
// command that puts things right.
func Command(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	if len(args) > 0 && args[0] == "healthcheck" {
		return healthcheck(ctx, or(getenv("LISTEN_ADDR"), defaultListenAddr))
	}
	if len(args) < 2 {
		return errors.New(usage)
	}
	st, closeDB, err := openStore(ctx, databaseConfig(getenv))
	if err != nil {
		return err
	}
	defer closeDB()
	c := cli{st: st, args: args[2:], stdin: stdin, stdout: stdout, getenv: getenv}
	switch args[0] + " " + args[1] {
	case "user add":
		return c.userAdd(ctx)
	case "user password":
		return c.userPassword(ctx)
	case "user list":
		return c.userList(ctx)
	case "user disable":
		return c.userDisable(ctx)
	case "user email":
		return c.userEmail(ctx)
	case "scim token":
		return scimToken(ctx, st, c.args, stdout)
	case "token create":
		return c.tokenCreate(ctx)
	case "server add":
		return c.serverAdd(ctx)
	case "team add":
		return c.teamAdd(ctx)
	case "team member":
		return c.teamMember(ctx)
	case "team list":
		return c.teamList(ctx)
	case "team channel":
		return c.teamChannel(ctx)
	}
	return errors.New(usage)
}

// cli is what a management command runs with: the store, the arguments
// after the command's two words, standard input and output, and the
// environment, for a setting a command needs.
type cli struct {
	st     *store.Store
	args   []string
	stdin  io.Reader
	stdout io.Writer
	getenv func(string) string
}

// line reads one line of standard input, without its line ending.
func (c cli) line() (string, error) {
	line, err := bufio.NewReader(c.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// userAdd adds a user, the password read from standard input.
func (c cli) userAdd(ctx context.Context) error {
	fs := flag.NewFlagSet("user add", flag.ContinueOnError)
	admin := fs.Bool("admin", false, "make the user an admin")
	email := fs.String("email", "", "the user's e-mail address, for round mail")
	if err := fs.Parse(reorder(c.args)); err != nil || fs.NArg() != 1 {
		return errors.New("usage: web user add [--admin] [--email ADDRESS] NAME (password on standard input)")
	}
	if _, err := store.CheckEmail(*email); err != nil {
		return err
	}
	password, err := c.line()
	if err != nil {
		return err
	}
	if len(password) < store.MinPasswordLength {
		return fmt.Errorf("the password must be at least %d characters", store.MinPasswordLength)
	}
	u, err := c.st.CreateUser(ctx, fs.Arg(0), password, *admin)
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("a user named %q already exists", fs.Arg(0))
	}
	if err != nil {
		return err
	}
	if *email != "" {
		if err := c.st.SetEmail(ctx, u.Name, *email); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "added %s%s\n", u.Name, map[bool]string{true: " (admin)"}[u.IsAdmin])
	return nil
}

// userPassword sets a user's new password, read from standard input.
func (c cli) userPassword(ctx context.Context) error {
	if len(c.args) != 1 {
		return errors.New("usage: web user password NAME (the new password on standard input)")
	}
	password, err := c.line()
	if err != nil {
		return err
	}
	err = c.st.SetUserPassword(ctx, c.args[0], password)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("there is no user named %q (see web user list)", c.args[0])
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "set a new password for %s; their sessions were ended\n", c.args[0])
	return nil
}

// userList lists the users.
func (c cli) userList(ctx context.Context) error {
	users, err := c.st.Users(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tADMIN\tDISABLED\tCREATED")
	for _, u := range users {
		fmt.Fprintf(w, "%s\t%t\t%t\t%s\n", u.Name, u.IsAdmin, u.Disabled, u.CreatedAt.UTC().Format("2006-01-02 15:04"))
	}
	return w.Flush()
}

// userDisable stops a user from signing in.
func (c cli) userDisable(ctx context.Context) error {
	if len(c.args) != 1 {
		return errors.New("usage: web user disable NAME")
	}
	if err := c.st.SetUserDisabled(ctx, c.args[0], true); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "disabled %s\n", c.args[0])
	return nil
}

// userEmail sets a user's e-mail address.
func (c cli) userEmail(ctx context.Context) error {
	if len(c.args) != 2 {
		return errors.New("usage: web user email NAME ADDRESS")
	}
	if err := c.st.SetEmail(ctx, c.args[0], c.args[1]); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "set the e-mail address of %s\n", c.args[0])
	return nil
}

// tokenCreate makes an API token for a user and prints it.
func (c cli) tokenCreate(ctx context.Context) error {
	if len(c.args) != 1 {
		return errors.New("usage: web token create NAME")
	}
	u, err := c.st.UserByName(ctx, c.args[0])
	if err != nil {
		return err
	}
	if u.Disabled {
		return fmt.Errorf("user %s is disabled", u.Name)
	}
	_, secret, err := c.st.CreateToken(ctx, u.ID, "created on the command line")
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "API token for %s (shown once; send it as Authorization: Bearer TOKEN):\n%s\n", u.Name, secret)
	return nil
}

// serverAdd registers an MCP server, with optional credentials.
func (c cli) serverAdd(ctx context.Context) error {
	fs := flag.NewFlagSet("server add", flag.ContinueOnError)
	header := fs.String("header", "", "a header to send, such as 'Authorization: Bearer …'; - reads it from standard input")
	agentQuestions := fs.String("agent-questions", "", "who answers the questions of calls agents start: agent, owner, a name or team:NAME")
	rules := fs.String("approvals", "", "approval rules: a JSON list, or a file holding one")
	if err := fs.Parse(reorder(c.args)); err != nil || fs.NArg() != 2 {
		return errors.New("usage: web server add NAME URL [--header 'Name: value' | --header -] [--agent-questions WHO] [--approvals FILE-OR-JSON]")
	}
	policy, err := readApprovals(*rules)
	if err != nil {
		return err
	}
	if *agentQuestions != "" {
		// Checked before the server is registered, so a mistake leaves nothing.
		if err := c.st.CheckAgentQuestions(ctx, *agentQuestions); err != nil {
			return err
		}
	}
	if *header == "-" {
		// Any user may read a command line (ps, /proc/<pid>/cmdline):
		// a credential is better given here.
		line, err := c.line()
		if err != nil {
			return err
		}
		*header = line
	}
	list, err := parseServers(fs.Arg(0) + "=" + fs.Arg(1))
	if err != nil {
		return err
	}
	if *header != "" {
		// Credentials are stored encrypted, with the server's key.
		key, err := parseCredentialsKey(c.getenv("CREDENTIALS_KEY"))
		if err != nil {
			return err
		}
		if err := useCredentialsKey(ctx, c.st, key); err != nil {
			return err
		}
	}
	if _, err := c.st.UpsertServer(ctx, list[0].Name, list[0].URL); err != nil {
		return err
	}
	if *header != "" {
		name, value, ok := strings.Cut(*header, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return errors.New("--header wants 'Name: value'")
		}
		if err := c.st.SetServerHeader(ctx, list[0].Name, name, strings.TrimSpace(value)); err != nil {
			return err
		}
	}
	if *agentQuestions != "" {
		if err := c.st.SetServerAgentQuestions(ctx, list[0].Name, *agentQuestions); err != nil {
			return err
		}
	}
	if policy != nil {
		entry := store.AuditEntry{Instance: "command line", Actor: "command line", Action: "server.approvals",
			Target: list[0].Name, Detail: map[string]any{"rules": len(policy.Rules())}}
		if err := c.st.SetServerApprovals(ctx, list[0].Name, policy, entry); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "registered %s at %s\n", list[0].Name, list[0].URL)
	return nil
}

// readApprovals reads --approvals: a JSON list of rules, or the name of a
// file holding one; "" is nil (leave the rules as they are).
func readApprovals(arg string) (*approvals.Policy, error) {
	if arg == "" {
		return nil, nil
	}
	data := []byte(arg)
	if t := strings.TrimSpace(arg); !strings.HasPrefix(t, "[") && t != "null" {
		var err error
		if data, err = os.ReadFile(arg); err != nil {
			return nil, fmt.Errorf("--approvals: %w", err)
		}
	}
	p, err := approvals.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("--approvals: %w", err)
	}
	return p, nil
}

// teamAdd adds a team.
func (c cli) teamAdd(ctx context.Context) error {
	if len(c.args) != 1 {
		return errors.New("usage: web team add NAME")
	}
	t, err := c.st.CreateTeam(ctx, c.args[0])
	if errors.Is(err, store.ErrConflict) {
		return fmt.Errorf("a team named %q already exists", c.args[0])
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "added team %s (assign calls to team:%s)\n", t.Name, t.Name)
	return nil
}

// teamMember adds a user to a team.
func (c cli) teamMember(ctx context.Context) error {
	if len(c.args) != 3 || c.args[0] != "add" {
		return errors.New("usage: web team member add TEAM USER")
	}
	if err := c.st.AddTeamMember(ctx, c.args[1], c.args[2]); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "added %s to team %s\n", c.args[2], c.args[1])
	return nil
}

// teamChannel sets the Slack channel a team's rounds are posted to.
func (c cli) teamChannel(ctx context.Context) error {
	if len(c.args) != 2 {
		return errors.New("usage: web team channel TEAM CHANNEL_ID ('' stops posting)")
	}
	channel := strings.TrimSpace(c.args[1])
	if err := c.st.SetTeamChannel(ctx, c.args[0], channel); err != nil {
		return err
	}
	if channel == "" {
		fmt.Fprintf(c.stdout, "team %s's rounds are posted to no Slack channel\n", c.args[0])
		return nil
	}
	fmt.Fprintf(c.stdout, "team %s's rounds are posted to Slack channel %s\n", c.args[0], channel)
	return nil
}

// teamList lists the teams and their members.
func (c cli) teamList(ctx context.Context) error {
	teams, err := c.st.Teams(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TEAM\tMEMBERS")
	for _, t := range teams {
		fmt.Fprintf(w, "%s\t%s\n", t.Name, strings.Join(t.Members, ", "))
	}
	return w.Flush()
}

// scimToken makes, lists or revokes provisioning tokens.
func scimToken(ctx context.Context, st *store.Store, args []string, stdout io.Writer) error {
	const usage = "usage: web scim token create NAME | web scim token list | web scim token revoke NAME"
	switch {
	case len(args) == 2 && args[0] == "create":
		secret, err := st.CreateProvisionToken(ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "Provisioning token %q (shown once; give it to the identity provider as its SCIM bearer token):\n%s\n", args[1], secret)
	case len(args) == 1 && args[0] == "list":
		tokens, err := st.ProvisionTokens(ctx)
		if err != nil {
			return err
		}
		when := func(t *time.Time, none string) string {
			if t == nil {
				return none
			}
			return t.UTC().Format("2006-01-02 15:04")
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "NAME\tMADE\tLAST USED\tREVOKED")
		for _, t := range tokens {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.Name, when(&t.CreatedAt, ""), when(t.LastUsedAt, "never"), when(t.RevokedAt, "-"))
		}
		return w.Flush()
	case len(args) == 2 && args[0] == "revoke":
		if err := st.RevokeProvisionToken(ctx, args[1], store.AuditEntry{Instance: "command line", Actor: "command line"}); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "revoked provisioning token %s: every instance refuses it now (401)\n", args[1])
	default:
		return errors.New(usage)
	}
	return nil
}

// healthcheck asks a running instance on listenAddr (LISTEN_ADDR) whether
// it is up, for container health checks in images without curl.
func healthcheck(ctx context.Context, listenAddr string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+loopback(listenAddr)+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// reorder puts flags before positional arguments, so that both
// "NAME URL --header …" and "--header … NAME URL" parse.
func reorder(args []string) []string {
	var flags, rest []string
	for i := 0; i < len(args); i++ {
		if strings.HasPrefix(args[i], "-") {
			flags = append(flags, args[i])
			if !strings.Contains(args[i], "=") && i+1 < len(args) {
				flags = append(flags, args[i+1])
				i++
			}
			continue
		}
		rest = append(rest, args[i])
	}
	return append(flags, rest...)
}

// openStore connects to the database cfg names and migrates it, as the
// server does at start.
func openStore(ctx context.Context, cfg Config) (*store.Store, func(), error) {
	dbs, err := openPools(ctx, cfg, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := store.Migrate(ctx, dbs.direct, slog.New(slog.DiscardHandler)); err != nil {
		dbs.Close()
		return nil, nil, err
	}
	st, err := store.New(dbs.main)
	if err != nil {
		dbs.Close()
		return nil, nil, err
	}
	return st, dbs.Close, nil
}
