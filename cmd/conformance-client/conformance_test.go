package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// scenarios are the conformance suite's client scenarios Rounds passes.
var scenarios = []string{
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
	"auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration", "auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	"auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
	"auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing",
	"auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized", "auth/metadata-issuer-mismatch",
	"sse-retry", "http-custom-headers", "http-invalid-tool-headers", "json-schema-2020-12-preservation",
}

// TestConformanceSuite runs the MCP conformance suite's client scenarios
// through this command, a developer's tool: it runs only when CONFORMANCE
// names a directory where the suite is installed with npm (see the
// README's "Servers that need sign-in"), so the tests never need npm.
func TestConformanceSuite(t *testing.T) {
	dir := os.Getenv("CONFORMANCE")
	if dir == "" {
		t.Skip("CONFORMANCE is not set to the directory where the conformance suite is installed")
	}
	bin := filepath.Join(t.TempDir(), "conformance-client")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	results := t.TempDir()
	for _, s := range scenarios {
		t.Run(s, func(t *testing.T) {
			cmd := exec.Command("npx", "conformance", "client", "--command", bin, "--scenario", s, "-o", results)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: %v\n%s", s, err, out)
			}
		})
	}
}
