package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/mcp-rounds/rounds/store"
)

// metadata is the authorization server metadata (RFC 8414), also served
// as the OpenID configuration: op's discovery document, with what Rounds
// adds (registration, client ID metadata documents) and without the
// endpoints it does not serve.
func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	ctx := op.ContextWithIssuer(r.Context(), s.issuer)
	raw, err := json.Marshal(op.CreateDiscoveryConfig(ctx, s.provider, s.provider.Storage()))
	if err != nil {
		http.Error(w, "The metadata could not be written.", http.StatusInternalServerError)
		return
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		http.Error(w, "The metadata could not be written.", http.StatusInternalServerError)
		return
	}
	for _, k := range []string{"userinfo_endpoint", "introspection_endpoint", "end_session_endpoint",
		"device_authorization_endpoint", "introspection_endpoint_auth_methods_supported",
		"revocation_endpoint_auth_methods_supported", "claims_supported"} {
		delete(m, k)
	}
	m["issuer"] = s.issuer
	m["authorization_endpoint"] = s.issuer + PathAuthorize
	m["token_endpoint"] = s.issuer + PathToken
	m["revocation_endpoint"] = s.issuer + PathRevoke
	m["registration_endpoint"] = s.issuer + PathRegister
	m["jwks_uri"] = s.issuer + PathKeys
	m["scopes_supported"] = []string{Scope, "openid", "offline_access"}
	m["response_types_supported"] = []string{"code"}
	m["response_modes_supported"] = []string{"query"}
	m["grant_types_supported"] = []string{"authorization_code", "refresh_token"}
	m["code_challenge_methods_supported"] = []string{"S256"}
	m["token_endpoint_auth_methods_supported"] = []string{"none", "client_secret_post", "client_secret_basic"}
	m["revocation_endpoint_auth_methods_supported"] = []string{"none", "client_secret_post", "client_secret_basic"}
	m["client_id_metadata_document_supported"] = true
	m["authorization_response_iss_parameter_supported"] = false
	writeJSON(w, http.StatusOK, m)
}

// resourceMetadata is a server's protected resource metadata (RFC 9728):
// each /mcp/{server} is a resource of its own, and Rounds its
// authorization server.
func (s *Server) resourceMetadata(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("server")
	if _, err := s.o.Store.ServerByName(r.Context(), name); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			http.Error(w, "There is no such server.", http.StatusNotFound)
			return
		}
		http.Error(w, "The metadata could not be read.", http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"resource":                 s.Resource(name),
		"authorization_servers":    []string{s.issuer},
		"bearer_methods_supported": []string{"header"},
		"scopes_supported":         []string{Scope},
		"resource_name":            name + " (through Rounds)",
	})
}

// servers turns resource parameters (RFC 8707) into the names of the
// enabled servers they are the resources of: each must be
// PublicURL/mcp/{server}. They come back sorted, each once.
func (s *Server) servers(ctx context.Context, resources []string) ([]string, error) {
	var names []string
	for _, res := range resources {
		rest, ok := strings.CutPrefix(res, s.issuer+"/mcp/")
		name, err := url.PathUnescape(strings.TrimSuffix(rest, "/"))
		if !ok || err != nil || name == "" || strings.Contains(rest, "?") || strings.Contains(rest, "#") {
			return nil, invalidTarget("Rounds serves no resource " + clip(res, 200) + ".")
		}
		if _, err := s.o.Store.ServerByName(ctx, name); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil, invalidTarget("Rounds serves no server at " + clip(res, 200) + ".")
			}
			return nil, err
		}
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

func pathEscape(name string) string { return url.PathEscape(name) }
