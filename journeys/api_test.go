package journeys

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// rawTool is a tool the wrapped demo server adds to its tools/list result,
// spelled the way no encoder of ours would: keys out of order, a number
// written 1.50, a Unicode escape.
const rawTool = `{"name":"raw_order","inputSchema":{"type":"object","properties":{"zeta":{"type":"number","maximum":1.50},"alpha":{"type":"string","description":"caf\u00e9"}},"required":["zeta"]}}`

// withRawTool adds rawTool to every tools/list result the demo sends.
func withRawTool(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte(`"tools/list"`)) {
			next.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		out := bytes.Replace(rec.Body.Bytes(), []byte(`"tools":[`), []byte(`"tools":[`+rawTool+`,`), 1)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(rec.Code)
		_, _ = w.Write(out)
	})
}

// openAPI is the app's OpenAPI document, fetched from it, compiled.
type openAPI struct {
	t   *testing.T
	doc map[string]any
	c   *jsonschema.Compiler
}

func fetchOpenAPI(t *testing.T, base string) *openAPI {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/openapi.json") // no token: the document is public
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("openapi.json: %d", resp.StatusCode)
	}
	doc, err := jsonschema.UnmarshalJSON(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	m := doc.(map[string]any)
	if m["openapi"] != "3.1.0" {
		t.Fatalf("openapi = %v, want 3.1.0", m["openapi"])
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("https://rounds.test/openapi.json", doc); err != nil {
		t.Fatal(err)
	}
	return &openAPI{t: t, doc: m, c: c}
}

// check validates a response against what the document says route (a
// path of the document, such as /calls/{id}) answers to method with status.
func (o *openAPI) check(method, route string, status int, body []byte) {
	o.t.Helper()
	op, _ := o.doc["paths"].(map[string]any)[route].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if op == nil {
		o.t.Fatalf("%s %s is not in the OpenAPI document", method, route)
	}
	resp, ok := op["responses"].(map[string]any)[itoa(status)].(map[string]any)
	if !ok {
		o.t.Fatalf("%s %s answered %d, which the document does not list: %s", method, route, status, body)
	}
	ptr := "#/paths/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(route) + "/" + strings.ToLower(method) +
		"/responses/" + itoa(status) + "/content/application~1json/schema"
	if ref, ok := resp["$ref"].(string); ok {
		ptr = ref + "/content/application~1json/schema"
	}
	sch, err := o.c.Compile("https://rounds.test/openapi.json" + ptr)
	if err != nil {
		o.t.Fatalf("compiling %s: %v", ptr, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		o.t.Fatalf("%s %s: the body is not JSON: %v", method, route, err)
	}
	if err := sch.Validate(v); err != nil {
		o.t.Errorf("%s %s %d does not fit the document: %v\n%s", method, route, status, err, body)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestAPIServersToolsAndCalls drives the API's servers, tools, call list and
// cancel end to end, and checks every response against the OpenAPI document
// the app serves.
func TestAPIServersToolsAndCalls(t *testing.T) {
	t.Parallel()
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, withRawTool)}, nil)
	api := fetchOpenAPI(t, inst.URL)
	c := newClient(t, db)
	base := inst.URL

	get := func(route, path string, want int) []byte {
		t.Helper()
		status, body := c.do("GET", base+"/api/v1"+path, "", "")
		if status != want {
			t.Fatalf("GET %s: %d %s, want %d", path, status, body, want)
		}
		api.check("GET", route, status, body)
		return body
	}

	var servers struct {
		Servers []struct {
			Name          string `json:"name"`
			Authorization struct {
				Status string `json:"status"`
			} `json:"authorization"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(get("/servers", "/servers", 200), &servers); err != nil {
		t.Fatal(err)
	}
	if len(servers.Servers) != 1 || servers.Servers[0].Name != "demo" || servers.Servers[0].Authorization.Status != "none" {
		t.Fatalf("servers = %+v, want demo needing no authorization", servers)
	}
	get("/servers/{name}", "/servers/demo", 200)
	get("/servers/{name}", "/servers/nope", 404)

	tools := get("/servers/{name}/tools", "/servers/demo/tools", 200)
	if !bytes.Contains(tools, []byte(rawTool)) {
		t.Fatalf("the tool list does not hold the server's bytes %s:\n%s", rawTool, tools)
	}
	if !bytes.Contains(tools, []byte(`"name":"book_flight"`)) {
		t.Fatalf("book_flight missing from %s", tools)
	}
	// From the cache the second time, still the same bytes.
	if again := get("/servers/{name}/tools", "/servers/demo/tools", 200); !bytes.Equal(again, tools) {
		t.Fatalf("cached tool list differs:\n%s\n%s", tools, again)
	}
	get("/servers/{name}/tools", "/servers/nope/tools", 404)

	// Three calls: one waits for answers, one is cancelled while it waits,
	// one completes.
	first := c.startCall(base, "book_flight", `{}`)
	second := c.startCall(base, "book_flight", `{}`)
	c.waitFor(base, first.ID, 10*time.Second, roundIs(1))
	c.waitFor(base, second.ID, 10*time.Second, roundIs(1))
	third := c.startCall(base, "book_flight", `{}`)
	c.waitFor(base, third.ID, 10*time.Second, roundIs(1))
	get("/calls/{id}", "/calls/"+first.ID, 200)

	status, body := c.do("POST", base+"/api/v1/calls/"+second.ID+"/cancel", "", "")
	api.check("POST", "/calls/{id}/cancel", status, body)
	var cancelled apiCall
	_ = json.Unmarshal(body, &cancelled)
	if status != http.StatusOK || cancelled.Status != "cancelled" || cancelled.Round != nil {
		t.Fatalf("cancel: %d %s", status, body)
	}
	status, body = c.do("POST", base+"/api/v1/calls/"+second.ID+"/cancel", "", "")
	api.check("POST", "/calls/{id}/cancel", status, body)
	if status != http.StatusConflict || !strings.Contains(string(body), "already ended") {
		t.Fatalf("second cancel: %d %s, want 409", status, body)
	}
	// The cancelled call's round can no longer be answered.
	if status, body := c.answer(base, second.ID, 1, tripAnswers); status != http.StatusConflict {
		t.Fatalf("answering a cancelled call: %d %s, want 409", status, body)
	}

	// Paging: newest first, two to a page.
	type page struct {
		Calls      []apiCall `json:"calls"`
		NextCursor *string   `json:"nextCursor"`
	}
	var p1, p2 page
	_ = json.Unmarshal(get("/calls", "/calls?limit=2", 200), &p1)
	if len(p1.Calls) != 2 || p1.Calls[0].ID != third.ID || p1.Calls[1].ID != second.ID || p1.NextCursor == nil {
		t.Fatalf("first page: %+v", p1)
	}
	_ = json.Unmarshal(get("/calls", "/calls?limit=2&cursor="+*p1.NextCursor, 200), &p2)
	if len(p2.Calls) != 1 || p2.Calls[0].ID != first.ID || p2.NextCursor != nil {
		t.Fatalf("second page: %+v", p2)
	}
	var filtered page
	_ = json.Unmarshal(get("/calls", "/calls?status=cancelled", 200), &filtered)
	if len(filtered.Calls) != 1 || filtered.Calls[0].ID != second.ID {
		t.Fatalf("cancelled calls: %+v", filtered)
	}
	_ = json.Unmarshal(get("/calls", "/calls?status=input_required,complete", 200), &filtered)
	if len(filtered.Calls) != 2 {
		t.Fatalf("waiting or complete calls: %+v", filtered)
	}
	get("/calls", "/calls?status=finished", 422)
	get("/calls", "/calls?limit=0", 422)
	get("/calls", "/calls?cursor=not-a-cursor", 422)

	// The last call completes; its answer and retry also fit the document.
	status, body = c.answer(base, first.ID, 1, tripAnswers)
	api.check("POST", "/calls/{id}/rounds/{seq}", status, body)
	c.waitFor(base, first.ID, 10*time.Second, roundIs(2))
	c.mustAnswer(base, first.ID, 2, seatAnswers)
	c.waitFor(base, first.ID, 10*time.Second, isDone)
	body = get("/calls/{id}", "/calls/"+first.ID, 200)
	status, retried := c.do("POST", base+"/api/v1/calls/"+first.ID+"/retry", "", "")
	api.check("POST", "/calls/{id}/retry", status, retried)
	status, body = c.do("POST", base+"/api/v1/calls/"+first.ID+"/cancel", "", "")
	api.check("POST", "/calls/{id}/cancel", status, body)
	if status != http.StatusConflict {
		t.Fatalf("cancelling a complete call: %d %s", status, body)
	}
	status, body = c.do("POST", base+"/api/v1/calls", "application/json", `{"server":"demo","tool":"book_flight"}`)
	api.check("POST", "/calls", status, body)
	status, body = c.do("POST", base+"/api/v1/calls", "application/json", `{"server":"demo"}`)
	api.check("POST", "/calls", status, body)

	// Someone else sees none of it, and cannot cancel it.
	addUser(t, db, "someone", "someone's long password")
	other := &client{t: t, token: newToken(t, db, "someone"), jar: c.jar}
	if status, body := other.do("POST", base+"/api/v1/calls/"+third.ID+"/cancel", "", ""); status != http.StatusNotFound {
		t.Fatalf("someone else cancelling: %d %s", status, body)
	}
	if _, body := other.do("GET", base+"/api/v1/calls", "", ""); !bytes.Contains(body, []byte(`"calls":[]`)) {
		t.Fatalf("someone else's list: %s", body)
	}
	status, body = c.do("GET", base+"/api/v1/calls/"+third.ID, "", "")
	if status != 200 || !strings.Contains(string(body), `"input_required"`) {
		t.Fatalf("third call after all that: %d %s", status, body)
	}
}
