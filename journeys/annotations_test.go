package journeys

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// annotatedTools are two tools the wrapped demo adds to its list: one that
// says it may delete for good, one that says it only reads.
const annotatedTools = `{"name":"wipe_disk","title":"Wipe a disk","annotations":{"destructiveHint":true,"readOnlyHint":false},"inputSchema":{"type":"object","properties":{"disk":{"type":"string","title":"Disk"}},"required":["disk"]}},` +
	`{"name":"read_notes","annotations":{"readOnlyHint":true},"inputSchema":{"type":"object"}},`

// TestToolAnnotations: a tool that says it is destructive is marked on its
// form and starts only once the person ticks that they want it (without
// JavaScript too: the form comes back with what they typed); a tool that
// only reads says so.
func TestToolAnnotations(t *testing.T) {
	t.Parallel()
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if !bytes.Contains(body, []byte(`"tools/list"`)) {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			out := bytes.Replace(rec.Body.Bytes(), []byte(`"tools":[`), []byte(`"tools":[`+annotatedTools), 1)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.Header().Del("Content-Length")
			w.WriteHeader(rec.Code)
			_, _ = w.Write(out)
		})
	}
	db := newDatabase(t)
	inst := startInstance(t, db, map[string]string{"MCP_SERVERS": "demo=" + demoServer(t, wrap)}, nil)
	c := newClient(t, db)
	c.login(inst.URL, "admin", adminPassword)

	_, page := c.do("GET", inst.URL+"/servers/demo/tools/wipe_disk", "", "")
	if !strings.Contains(string(page), `data-testid="destructive"`) || !strings.Contains(string(page), `name="confirm_destructive" value="yes" required`) {
		t.Fatalf("the destructive tool's form is not marked, or asks no confirmation:\n%s", page)
	}
	status, body := c.post(inst.URL+"/servers/demo/tools/wipe_disk", url.Values{"arg.disk": {"/dev/sdz"}})
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), "Tick the box to confirm") ||
		!strings.Contains(string(body), `value="/dev/sdz"`) {
		t.Fatalf("started without confirming: %d", status)
	}
	if n := callCount(t, db); n != 0 {
		t.Fatalf("%d calls started without the confirmation", n)
	}
	status, _ = c.post(inst.URL+"/servers/demo/tools/wipe_disk", url.Values{"arg.disk": {"/dev/sdz"}, "confirm_destructive": {"yes"}})
	if status != http.StatusSeeOther || callCount(t, db) != 1 {
		t.Fatalf("confirmed: %d, %d calls", status, callCount(t, db))
	}

	_, page = c.do("GET", inst.URL+"/servers/demo/tools/read_notes", "", "")
	if !strings.Contains(string(page), `data-testid="read-only"`) || strings.Contains(string(page), `data-testid="destructive"`) {
		t.Fatalf("the read-only tool's page:\n%s", page)
	}
}

// callCount counts the calls in the test's database.
func callCount(t *testing.T, db string) int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n int
	if err := conn.QueryRow(t.Context(), `select count(*) from calls`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
