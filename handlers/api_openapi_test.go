package handlers

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
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
