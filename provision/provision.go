// Package provision serves SCIM 2.0 (RFC 7643, RFC 7644) at /scim/v2, so
// that an identity provider (Okta, Microsoft Entra) creates, updates,
// deactivates and deletes people, and keeps teams as its groups. The
// protocol (routing, schemas, filters, PATCH paths, errors, list
// responses) is github.com/elimity-com/scim's; this package maps its
// resources to Rounds' accounts and teams.
package provision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/elimity-com/scim"
	scimerrors "github.com/elimity-com/scim/errors"
	"github.com/elimity-com/scim/optional"
	"github.com/elimity-com/scim/schema"

	"github.com/mcp-rounds/rounds/store"
)

// Prefix is where SCIM is served.
const Prefix = "/scim/v2"

// service is what the resource handlers share: the store, this
// instance's name for the audit log, and the logger 500s go to.
type service struct {
	st       *store.Store
	instance string
	log      *slog.Logger
}

// tokenKey holds, in a request's context, the name of the provisioning
// token it came with.
type tokenKey struct{}

// by is who makes the request's change, for the audit log.
func (s *service) by(r *http.Request) store.Provisioner {
	name, _ := r.Context().Value(tokenKey{}).(string)
	return store.Provisioner{Instance: s.instance, Token: name}
}

// Handler returns the SCIM service, behind a check of the bearer token an
// admin made (web scim token create). instance names this instance in the
// audit log.
func Handler(st *store.Store, instance string, log *slog.Logger) (http.Handler, error) {
	svc := &service{st: st, instance: instance, log: log}
	userSchema, groupSchema, enterprise := schema.CoreUserSchema(), schema.CoreGroupSchema(), schema.ExtensionEnterpriseUser()
	srv, err := scim.NewServer(&scim.ServerArgs{
		ServiceProviderConfig: &scim.ServiceProviderConfig{
			DocumentationURI: optional.NewString("https://github.com/mcp-rounds/rounds/blob/main/docs/operating.md#provisioning-scim"),
			AuthenticationSchemes: []scim.AuthenticationScheme{{Type: scim.AuthenticationTypeOauthBearerToken,
				Name: "Bearer token", Description: "A token made with web scim token create", Primary: true}},
			SupportFiltering: true, SupportPatch: true,
		},
		ResourceTypes: []scim.ResourceType{
			{ID: optional.NewString("User"), Name: "User", Endpoint: "/Users", Schema: userSchema,
				Handler: &users{service: svc, hidden: hiddenOf(userSchema, enterprise)},
				// Entra sends the enterprise extension with every user.
				SchemaExtensions: []scim.SchemaExtension{{Schema: enterprise}}},
			{ID: optional.NewString("Group"), Name: "Group", Endpoint: "/Groups", Schema: groupSchema,
				Handler: &groups{service: svc, hidden: hiddenOf(groupSchema)}},
		},
	}, scim.WithLogger(libraryLog{log}))
	if err != nil {
		return nil, err
	}
	inner := http.StripPrefix("/scim", srv)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secret, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		secret = strings.TrimSpace(secret)
		if !ok || secret == "" {
			refuse(w)
			return
		}
		// The token is looked up by its hash, so its check takes no
		// comparison that could leak it; and on every request, so a
		// revoked one is refused at once on every instance.
		tok, err := st.ProvisionTokenBySecret(r.Context(), secret)
		switch {
		case errors.Is(err, store.ErrNotFound):
			refuse(w)
			return
		case err != nil:
			log.ErrorContext(r.Context(), "SCIM: checking the token", "err", err)
			writeError(w, scimerrors.ScimError{Status: http.StatusServiceUnavailable,
				Detail: "The database is not answering just now; try again."})
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), tokenKey{}, tok.Name))
		if r.Method == http.MethodPatch {
			if err := booleansAsSent(r); err != nil {
				writeError(w, scimerrors.ScimError{Status: http.StatusBadRequest, ScimType: scimerrors.ScimTypeInvalidSyntax,
					Detail: "The body is not a PATCH request."})
				return
			}
		}
		inner.ServeHTTP(w, r)
	}), nil
}

// refuse answers a request without a valid token.
func refuse(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="scim"`)
	writeError(w, scimerrors.ScimError{Status: http.StatusUnauthorized,
		Detail: "Send a provisioning token that is not revoked: Authorization: Bearer TOKEN."})
}

func writeError(w http.ResponseWriter, e scimerrors.ScimError) {
	w.Header().Set("Content-Type", "application/scim+json")
	w.WriteHeader(e.Status)
	b, _ := json.Marshal(e)
	_, _ = w.Write(b)
}

// libraryLog passes the SCIM library's errors (a response it could not
// write) to the logger.
type libraryLog struct{ log *slog.Logger }

func (l libraryLog) Error(args ...any) {
	msg, _ := args[0].(string)
	l.log.Error("SCIM: "+msg, args[1:]...)
}

// maxBody caps a SCIM request's body.
const maxBody = 1 << 20

// booleansAsSent turns "True" and "False" given for active into booleans:
// Microsoft Entra sends them as strings unless told otherwise, and the
// schema checks would refuse them.
func booleansAsSent(r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return err
	}
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		r.Body = io.NopCloser(bytes.NewReader(body)) // the library says what is wrong
		return nil
	}
	ops, _ := req["Operations"].([]any)
	for _, o := range ops {
		op, _ := o.(map[string]any)
		if path, _ := op["path"].(string); strings.EqualFold(path, "active") {
			op["value"] = asBool(op["value"])
		}
		if values, ok := op["value"].(map[string]any); ok {
			if v, ok := values["active"]; ok {
				values["active"] = asBool(v)
			}
		}
	}
	fixed, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(fixed))
	r.ContentLength = int64(len(fixed))
	return nil
}

func asBool(v any) any {
	if s, ok := v.(string); ok && (strings.EqualFold(s, "true") || strings.EqualFold(s, "false")) {
		return strings.EqualFold(s, "true")
	}
	return v
}

// invalidValue is a 400 invalidValue that says what is wrong.
func invalidValue(detail string) scimerrors.ScimError {
	return scimerrors.ScimError{ScimType: scimerrors.ScimTypeInvalidValue, Detail: detail, Status: http.StatusBadRequest}
}

// internalError is what a provider is told of a failure of ours: a
// sentence, never the database's text, which goes to the log.
var internalError = scimerrors.ScimError{Status: http.StatusInternalServerError,
	Detail: "Something went wrong on our side; try again. The server's log says what."}

// fail maps an error to SCIM's: the store's kinds to their statuses with
// the store's sentence, SCIM's own as they are, anything else to a 500
// logged at ERROR with its cause.
func (s *service) fail(r *http.Request, err error, id string) error {
	var se *store.Error
	var scimErr scimerrors.ScimError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &scimErr):
		return scimErr
	case errors.Is(err, store.ErrNotFound):
		return scimerrors.ScimErrorResourceNotFound(id)
	case errors.Is(err, store.ErrConflict) && errors.As(err, &se):
		return scimerrors.ScimError{ScimType: scimerrors.ScimTypeUniqueness, Detail: se.Message, Status: http.StatusConflict}
	case errors.Is(err, store.ErrInvalid) && errors.As(err, &se):
		return invalidValue(se.Message)
	}
	s.log.ErrorContext(r.Context(), "SCIM request failed", "err", err, "method", r.Method, "path", r.URL.Path)
	return internalError
}

func parseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, scimerrors.ScimErrorResourceNotFound(id)
	}
	return n, nil
}

// page cuts a list as startIndex and count ask.
func page(all []scim.Resource, params scim.ListRequestParams) scim.Page {
	p := scim.Page{TotalResults: len(all), Resources: []scim.Resource{}}
	start := max(params.StartIndex, 1) - 1
	if start >= len(all) {
		return p
	}
	end := min(len(all), start+max(params.Count, 0))
	p.Resources = all[start:end]
	return p
}

// filteredPage keeps the resources the request's filter passes, matched
// on attrs with their id and externalId, and cuts them as page does.
func filteredPage(all []scim.Resource, params scim.ListRequestParams, attrs func(scim.Resource) scim.ResourceAttributes) scim.Page {
	var matched []scim.Resource
	for _, res := range all {
		if params.FilterValidator != nil {
			full := attrs(res)
			full["id"] = res.ID
			if res.ExternalID.Present() {
				full["externalId"] = res.ExternalID.Value()
			}
			if params.FilterValidator.PassesFilter(full) != nil {
				continue
			}
		}
		matched = append(matched, res)
	}
	return page(matched, params)
}

// memberIDs reads the account ids of a members list.
func memberIDs(v any) ([]int64, error) {
	list, ok := v.([]any)
	if !ok && v != nil {
		list = []any{v}
	}
	var ids []int64
	for _, e := range list {
		m, _ := e.(map[string]any)
		s, _ := m["value"].(string)
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, invalidValue(fmt.Sprintf("Member %s is not a person provisioned here.", shown(s)))
		}
		ids = append(ids, n)
	}
	return ids, nil
}

// shown quotes what a provider sent in a message, cut short.
func shown(s string) string {
	if len([]rune(s)) > 64 {
		s = string([]rune(s)[:64]) + "…"
	}
	return strconv.Quote(s)
}
