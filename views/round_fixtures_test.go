package views

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/mcp-rounds/rounds/round"
	"github.com/mcp-rounds/rounds/store"
)

// urlAsk is an inputRequests entry asking, in URL mode, to open u.
func urlAsk(t *testing.T, u string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "url", "message": "Open this page to connect your account.", "url": u, "elicitationId": "e1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

const taskAsk = `{"method":"elicitation/create","params":{"mode":"form","message":"Describe the task.","requestedSchema":{
	"type":"object","properties":{
		"title":{"type":"string","title":"Title","minLength":3},
		"points":{"type":"integer","title":"Story points","default":3}},
	"required":["title"]}}}`

// pendingRound is a stored round with the given inputRequests.
func pendingRound(inputRequests string) (*store.Call, *store.Round) {
	call := &store.Call{ID: "8d0c6a1e-5b0e-4c51-9d53-2f4d5b8e7a10", ServerName: "demo", Status: store.CallInputRequired, CurrentSeq: 1}
	return call, &store.Round{CallID: call.ID, Seq: 1, InputRequests: json.RawMessage(inputRequests), Status: store.RoundPending}
}

// renderRound renders the call page body of a pending round, as the call page
// does, with qs and actions as a failed submit leaves them (nil for a
// fresh page).
func renderRound(t *testing.T, call *store.Call, r *store.Round, qs []round.Question, actions []string) (*goquery.Document, string) {
	t.Helper()
	if qs == nil {
		var err error
		if qs, err = round.Parse(r); err != nil {
			t.Fatal(err)
		}
	}
	round.WithRoots(qs, call)
	current := RoundForm(r, call.ServerName, qs, actions)
	var buf bytes.Buffer
	vm := CallVM{ID: call.ID, Server: call.ServerName, Status: call.Status, Current: current}
	if err := CallBody(vm).Render(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, buf.String()
}

const tripAsk = `{"method":"elicitation/create","params":{"mode":"form","message":"MESSAGE","requestedSchema":{
	"type":"object","properties":{
		"destination":{"type":"string","title":"Destination"},
		"date":{"type":"string","format":"date","title":"Departure date"},
		"class":{"type":"string","title":"Class","oneOf":[{"const":"economy","title":"Economy"},{"const":"business","title":"Business"}]},
		"meals":{"type":"array","title":"Meals","items":{"anyOf":[{"const":"veg","title":"Vegetarian"},{"const":"kosher","title":"Kosher"}]}},
		"window":{"type":"boolean","title":"Window seat"},
		"remind":{"type":"string","format":"date-time","title":"Remind me at"},
		"note":{"type":"string","title":"Note"}},
	"required":["destination","date"]}}}`

func trip(message string) string { return strings.Replace(tripAsk, "MESSAGE", message, 1) }

// samplingAsk is a sampling request with everything a server may send.
const samplingAsk = `{"method":"sampling/createMessage","params":{
	"systemPrompt":"You are <b>terse</b>.",
	"messages":[
		{"role":"user","content":{"type":"text","text":"What is the capital of France?"}},
		{"role":"assistant","content":[{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},
			{"type":"image","mimeType":"image/svg+xml","data":"PHN2Zy8+"}]},
		{"role":"user","content":{"type":"audio","mimeType":"audio/wav","data":"not base64!"}}],
	"maxTokens":100,"temperature":0.2,"stopSequences":["END"],
	"modelPreferences":{"hints":[{"name":"claude-3-sonnet"},{"name":"claude"}],"intelligencePriority":0.8,"speedPriority":0.5},
	"tools":[{"name":"get_weather","description":"Weather for a city","inputSchema":{"type":"object"}}],
	"toolChoice":{"mode":"auto"}}}`

func multipleRound(t *testing.T) (*store.Call, *store.Round) {
	t.Helper()
	call, r := pendingRound(`{"capital":` + samplingAsk + `,"roots":{"method":"roots/list"},"trip":` + taskAsk + `}`)
	call.ServerRootsList = json.RawMessage(`[{"uri":"file:///srv/data","name":"Data"}]`)
	return call, r
}
