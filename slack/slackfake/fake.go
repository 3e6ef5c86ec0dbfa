// Package slackfake is a fake Slack for tests: the Web API methods Rounds
// calls, served on an httptest server; an interaction sender that signs its
// requests as Slack does; and a Socket Mode WebSocket. It is written from
// Slack's documentation (api.slack.com: the methods' pages, the Block Kit
// reference, "Verifying requests from Slack", the interaction payloads and
// Socket Mode), never from the code under test.
//
// Every Web API call is recorded (Calls), every posted message and opened
// view is checked against Block Kit's structure and limits, and a breach is
// answered as Slack answers it ({"ok":false,"error":"invalid_blocks"}) and
// kept in Violations, which a test can assert empty.
package slackfake

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tokens and ids the fake starts with.
const (
	BotToken      = "xoxb-fake-bot-token"
	AppToken      = "xapp-1-fake-app-token"
	SigningSecret = "fake-signing-secret"
	TeamID        = "T0FAKE"
	BotUserID     = "U0BOT"
	AppID         = "A0FAKE"
)

// TriggerTTL is how long a trigger_id may open a view: Slack says 3 seconds.
const TriggerTTL = 3 * time.Second

// Call is one recorded Web API call.
type Call struct {
	Method string
	Args   map[string]any // form fields as strings, JSON bodies as decoded; blocks and view decoded either way
	Token  string
	At     time.Time
}

// Arg returns a string argument ("" when absent or not a string).
func (c Call) Arg(name string) string { s, _ := c.Args[name].(string); return s }

// Violation is a Block Kit rule a posted message or view broke.
type Violation struct {
	Method  string
	Problem string
}

// Failure makes a method answer as Slack does when it fails.
type Failure struct {
	Status     int           // HTTP status; 0 means 200
	Error      string        // the "error" of {"ok":false}; "" with a 5xx gives a plain-text body
	RetryAfter time.Duration // sets Retry-After (whole seconds), as for ratelimited
	Times      int           // how many calls fail; 0 means until Heal
}

// User is a member of the fake workspace.
type User struct {
	ID, Name, RealName, Email string
}

// Message is a message as the fake holds it after postMessage and update.
type Message struct {
	Channel, TS, Text, ThreadTS string
	Blocks                      []any
	Updated                     int // times chat.update changed it
}

// Ephemeral is a message only one user sees.
type Ephemeral struct {
	Channel, User, Text string
	Blocks              []any
}

// View is a modal opened or updated through views.open or views.update.
type View struct {
	ID, ExternalID, Hash, User string
	View                       map[string]any
	Closed                     bool
}

// Fake is a running fake Slack. The zero value is not usable; call New.
type Fake struct {
	Server *httptest.Server
	// InteractionURL is where interactions are posted (the app's
	// Request URL, e.g. PUBLIC_URL/slack/interactions).
	InteractionURL string
	// Now is the clock of recorded calls, trigger expiry and signatures.
	Now func() time.Time

	mu         sync.Mutex
	seq        int
	calls      []Call
	violations []Violation
	late       []string // replies over ReplyTimeout
	failures   map[string]*Failure
	users      map[string]User // by ID
	channels   map[string]bool
	messages   []*Message
	ephemerals []Ephemeral
	views      []*View
	triggers   map[string]time.Time // trigger_id → issued
	socket     *sockets
}

// New starts a fake Slack, closed when the test ends.
func New(tb testing.TB) *Fake {
	tb.Helper()
	f := &Fake{
		Now:      time.Now,
		failures: map[string]*Failure{},
		users:    map[string]User{},
		channels: map[string]bool{},
		triggers: map[string]time.Time{},
	}
	f.socket = newSockets(f)
	mux := http.NewServeMux()
	mux.HandleFunc("/api/{method}", f.serveAPI)
	mux.HandleFunc("/socket", f.socket.serve)
	mux.HandleFunc("POST /response/{channel}/{ts}", f.serveResponseURL)
	f.Server = httptest.NewServer(mux)
	tb.Cleanup(func() {
		f.socket.closeAll()
		f.Server.Close()
	})
	return f
}

// APIURL is the Web API base, with its trailing slash, as slack-go's
// OptionAPIURL and Rounds' SLACK_API_URL take it.
func (f *Fake) APIURL() string { return f.Server.URL + "/api/" }

// AddUser adds a member, found by users.lookupByEmail.
func (f *Fake) AddUser(u User) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u.Name == "" {
		u.Name = strings.ToLower(u.ID)
	}
	f.users[u.ID] = u
}

// AddChannel adds a channel a message may be posted to.
func (f *Fake) AddChannel(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.channels[id] = true
}

// Fail has method fail as fl says until Heal (or fl.Times calls).
func (f *Fake) Fail(method string, fl Failure) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures[method] = &fl
}

// Heal ends every failure set with Fail.
func (f *Fake) Heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.failures)
}

// Calls returns the recorded calls, of the given methods only if any.
func (f *Fake) Calls(methods ...string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if len(methods) == 0 || slices.Contains(methods, c.Method) {
			out = append(out, c)
		}
	}
	return out
}

// Violations returns every Block Kit breach seen so far.
func (f *Fake) Violations() []Violation {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.violations)
}

// Messages returns copies of the messages posted so far, oldest first.
func (f *Fake) Messages() []Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]Message, len(f.messages))
	for i, m := range f.messages {
		out[i] = *m
	}
	return out
}

// Ephemerals returns the ephemeral messages posted so far.
func (f *Fake) Ephemerals() []Ephemeral {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ephemerals)
}

// Views returns copies of the views opened so far, oldest first.
func (f *Fake) Views() []View {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]View, len(f.views))
	for i, v := range f.views {
		out[i] = *v
		out[i].View = maps.Clone(v.View)
	}
	return out
}

// next returns a fresh number for ids and timestamps.
func (f *Fake) next() int {
	f.seq++
	return f.seq
}

// apiError is what a method answers when it refuses.
type apiError struct {
	status int
	code   string
}

func (e *apiError) Error() string { return e.code }

func refuse(code string) *apiError { return &apiError{status: http.StatusOK, code: code} }

// serveAPI answers one Web API call: auth, any failure set, then the method.
func (f *Fake) serveAPI(w http.ResponseWriter, r *http.Request) {
	method := r.PathValue("method")
	args, err := readArgs(r)
	token := bearer(r, args)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Method: method, Args: args, Token: token, At: f.Now()})
	if err != nil {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "invalid_form_data"})
		return
	}
	if fl := f.failures[method]; fl != nil {
		f.writeFailure(w, method, fl)
		return
	}
	h, known := f.methods()[method]
	if !known {
		writeJSON(w, http.StatusOK, map[string]any{"ok": false, "error": "unknown_method"})
		return
	}
	if e := checkToken(method, token); e != nil {
		writeJSON(w, e.status, map[string]any{"ok": false, "error": e.code})
		return
	}
	out, e := h(args)
	if e != nil {
		writeJSON(w, e.status, map[string]any{"ok": false, "error": e.code})
		return
	}
	out["ok"] = true
	writeJSON(w, http.StatusOK, out)
}

func (f *Fake) writeFailure(w http.ResponseWriter, method string, fl *Failure) {
	if fl.Times > 0 {
		if fl.Times--; fl.Times == 0 {
			delete(f.failures, method)
		}
	}
	status := fl.Status
	if status == 0 {
		status = http.StatusOK
	}
	if fl.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((fl.RetryAfter+time.Second-1)/time.Second)))
	}
	if fl.Error == "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, http.StatusText(status))
		return
	}
	writeJSON(w, status, map[string]any{"ok": false, "error": fl.Error})
}

// checkToken refuses a missing, unknown or wrong kind of token: methods
// take the bot token, apps.connections.open the app-level one.
func checkToken(method, token string) *apiError {
	switch {
	case token == "":
		return refuse("not_authed")
	case method == "apps.connections.open" && strings.HasPrefix(token, "xoxb-"),
		method != "apps.connections.open" && strings.HasPrefix(token, "xapp-"):
		return refuse("not_allowed_token_type")
	case token != BotToken && token != AppToken:
		return refuse("invalid_auth")
	}
	return nil
}

// bearer reads the token from Authorization, else from a token argument.
func bearer(r *http.Request, args map[string]any) string {
	if t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return t
	}
	t, _ := args["token"].(string)
	return t
}

// jsonArgs are the arguments a form body carries as JSON text.
var jsonArgs = []string{"blocks", "view", "attachments", "metadata"}

// readArgs reads a call's arguments from a JSON or form body (or the query).
func readArgs(r *http.Request) (map[string]any, error) {
	args := map[string]any{}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			return args, err
		}
		if len(strings.TrimSpace(string(body))) == 0 {
			return args, nil
		}
		d := json.NewDecoder(strings.NewReader(string(body)))
		d.UseNumber()
		return args, d.Decode(&args)
	}
	if err := r.ParseForm(); err != nil {
		return args, err
	}
	for k, v := range r.Form {
		args[k] = v[0]
	}
	for _, k := range jsonArgs {
		s, ok := args[k].(string)
		if !ok || s == "" {
			continue
		}
		var v any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return args, fmt.Errorf("%s: %w", k, err)
		}
		args[k] = v
	}
	return args, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
