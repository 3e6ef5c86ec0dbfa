package handlers

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-rounds/rounds/mcpclient"
	"github.com/mcp-rounds/rounds/round"
)

// TestOpenAPIDocumentsEveryRoute checks the OpenAPI document against the
// routes: every API route is documented, and the document has nothing the
// app does not serve.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q", doc.OpenAPI)
	}
	param := regexp.MustCompile(`:([a-z]+)`)
	docName := map[string]string{"server": "name"} // the document names the server parameter for what it is
	var served []string
	for _, r := range (&Handler{}).Routes().Routes() {
		path, ok := strings.CutPrefix(r.Path, "/api/v1")
		if !ok {
			continue
		}
		path = param.ReplaceAllStringFunc(path, func(p string) string {
			name := p[1:]
			if n, ok := docName[name]; ok {
				name = n
			}
			return "{" + name + "}"
		})
		served = append(served, strings.ToLower(r.Method)+" "+path)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented = append(documented, method+" "+path)
			}
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	if !slices.Equal(served, documented) {
		t.Fatalf("routes and document differ:\nserved     %q\ndocumented %q", served, documented)
	}
}

// TestProtocolChoices: the API takes, documents and names in its error the
// same protocols: "auto" and the revisions the client speaks.
func TestProtocolChoices(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var create struct {
		RequestBody struct {
			Content map[string]struct {
				Schema struct {
					Properties map[string]struct {
						Enum []string `json:"enum"`
					} `json:"properties"`
				} `json:"schema"`
			} `json:"content"`
		} `json:"requestBody"`
	}
	if err := json.Unmarshal(doc.Paths["/calls"]["post"], &create); err != nil {
		t.Fatal(err)
	}
	documented := create.RequestBody.Content["application/json"].Schema.Properties["protocol"].Enum
	want := append([]string{"auto"}, mcpclient.Revisions...)
	if !slices.Equal(documented, want) {
		t.Errorf("the document's protocols = %q, want %q", documented, want)
	}
	for _, p := range append(want, "") {
		if !round.KnownProtocol(p) {
			t.Errorf("round.KnownProtocol(%q) = false", p)
		}
	}
	if round.KnownProtocol("2024-10-07") {
		t.Error("knownProtocol takes a revision nobody speaks")
	}
	const said = `"auto" or a revision: "2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26" or "2024-11-05"`
	if got := round.ProtocolChoices(); got != said {
		t.Errorf("round.ProtocolChoices() = %s, want %s", got, said)
	}
}
