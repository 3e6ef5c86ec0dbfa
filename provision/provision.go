// Package provision serves SCIM 2.0 (RFC 7643, RFC 7644) at /scim/v2, so
// that an identity provider (Okta, Microsoft Entra) creates, updates,
// deactivates and deletes people, and keeps teams as its groups. The
// protocol (routing, schemas, filters, PATCH paths, errors, list
// responses) is github.com/elimity-com/scim's; this package maps its
// resources to Rounds' accounts and teams.
package provision

import (
	"bytes"
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

// Handler returns the SCIM service, behind a check of the bearer token an
// admin made (web scim token create). instance names this instance in the
// audit log.
func Handler(st *store.Store, instance string, log *slog.Logger) (http.Handler, error) {
	users := &users{st: st, instance: instance}
	groups := &groups{st: st, instance: instance}
	srv, err := scim.NewServer(&scim.ServerArgs{
		ServiceProviderConfig: &scim.ServiceProviderConfig{
			DocumentationURI: optional.NewString("https://github.com/mcp-rounds/rounds/blob/main/docs/operating.md#provisioning-scim"),
			AuthenticationSchemes: []scim.AuthenticationScheme{{Type: scim.AuthenticationTypeOauthBearerToken,
				Name: "Bearer token", Description: "A token made with web scim token create", Primary: true}},
			SupportFiltering: true, SupportPatch: true,
		},
		ResourceTypes: []scim.ResourceType{
			{ID: optional.NewString("User"), Name: "User", Endpoint: "/Users", Schema: schema.CoreUserSchema(), Handler: users,
				// Entra sends the enterprise extension with every user.
				SchemaExtensions: []scim.SchemaExtension{{Schema: schema.ExtensionEnterpriseUser()}}},
			{ID: optional.NewString("Group"), Name: "Group", Endpoint: "/Groups", Schema: schema.CoreGroupSchema(), Handler: groups},
		},
	})
	if err != nil {
		return nil, err
	}
	inner := http.StripPrefix("/scim", srv)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		valid := false
		// The token is looked up by its hash, so its check takes no
		// comparison that could leak it.
		if ok && strings.TrimSpace(token) != "" {
			var err error
			if valid, err = st.ProvisionTokenValid(r.Context(), strings.TrimSpace(token)); err != nil {
				log.ErrorContext(r.Context(), "SCIM: checking the token", "err", err)
				http.Error(w, "the database is not answering", http.StatusServiceUnavailable)
				return
			}
		}
		if !valid {
			w.Header().Set("WWW-Authenticate", `Bearer realm="scim"`)
			w.Header().Set("Content-Type", "application/scim+json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"401","detail":"Send a provisioning token: Authorization: Bearer TOKEN."}`))
			return
		}
		if r.Method == http.MethodPatch {
			if err := booleansAsSent(r); err != nil {
				w.Header().Set("Content-Type", "application/scim+json")
				w.WriteHeader(http.StatusBadRequest)
				_, _ = w.Write([]byte(`{"schemas":["urn:ietf:params:scim:api:messages:2.0:Error"],"status":"400","scimType":"invalidSyntax","detail":"The body is not a PATCH request."}`))
				return
			}
		}
		inner.ServeHTTP(w, r)
	}), nil
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

// scimError maps the store's errors to SCIM's.
func scimError(err error, id string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrNotFound):
		return scimerrors.ScimErrorResourceNotFound(id)
	case errors.Is(err, store.ErrConflict):
		return scimerrors.ScimErrorUniqueness
	case errors.Is(err, store.ErrInvalid):
		var se *store.Error
		errors.As(err, &se)
		return scimerrors.ScimErrorBadRequest(se.Message)
	}
	return err
}

func parseID(id string) (int64, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 {
		return 0, scimerrors.ScimErrorResourceNotFound(id)
	}
	return n, nil
}

// users maps SCIM Users to accounts.
type users struct {
	st       *store.Store
	instance string
}

// fromAttributes reads what Rounds keeps of a User resource.
func fromAttributes(a scim.ResourceAttributes) (store.ProvisionUser, error) {
	p := store.ProvisionUser{Active: true}
	p.UserName, _ = a["userName"].(string)
	if p.UserName == "" {
		return p, scimerrors.ScimErrorBadRequest("userName is required")
	}
	p.ExternalID, _ = a["externalId"].(string)
	if v, ok := a["active"]; ok {
		p.Active = truthy(v)
	}
	p.Email = primaryEmail(a["emails"])
	b, err := json.Marshal(a)
	p.Attributes = b
	return p, err
}

// truthy reads a boolean as sent: Entra has sent "False" as a string.
func truthy(v any) bool {
	switch v := v.(type) {
	case bool:
		return v
	case string:
		return strings.EqualFold(v, "true")
	}
	return false
}

func primaryEmail(v any) string {
	list, _ := v.([]any)
	first := ""
	for _, e := range list {
		m, _ := e.(map[string]any)
		addr, _ := m["value"].(string)
		if truthy(m["primary"]) {
			return addr
		}
		if first == "" {
			first = addr
		}
	}
	return first
}

func userResource(u *store.ProvisionedUser) scim.Resource {
	attrs := scim.ResourceAttributes{}
	_ = json.Unmarshal(u.Attributes, &attrs)
	delete(attrs, "id")
	delete(attrs, "externalId")
	delete(attrs, "meta")
	delete(attrs, "schemas")
	attrs["userName"] = u.UserName
	attrs["active"] = u.Active
	if u.Email != "" && attrs["emails"] == nil {
		attrs["emails"] = []any{map[string]any{"value": u.Email, "primary": true}}
	}
	r := scim.Resource{ID: strconv.FormatInt(u.ID, 10), Attributes: attrs,
		Meta: scim.Meta{Created: &u.Created, LastModified: &u.Updated, Version: fmt.Sprintf("W/\"%d\"", u.Updated.UnixMicro())}}
	if u.ExternalID != nil {
		r.ExternalID = optional.NewString(*u.ExternalID)
	}
	return r
}

func (h *users) Create(r *http.Request, a scim.ResourceAttributes) (scim.Resource, error) {
	p, err := fromAttributes(a)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.CreateProvisionedUser(r.Context(), p, h.instance)
	if err != nil {
		return scim.Resource{}, scimError(err, "")
	}
	return userResource(u), nil
}

func (h *users) Get(r *http.Request, id string) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.ProvisionedUser(r.Context(), n)
	if err != nil {
		return scim.Resource{}, scimError(err, id)
	}
	return userResource(u), nil
}

func (h *users) GetAll(r *http.Request, params scim.ListRequestParams) (scim.Page, error) {
	all, err := h.st.ProvisionedUsers(r.Context())
	if err != nil {
		return scim.Page{}, err
	}
	res := make([]scim.Resource, len(all))
	for i := range all {
		res[i] = userResource(&all[i])
	}
	return filteredPage(res, params, func(r scim.Resource) scim.ResourceAttributes {
		full := scim.ResourceAttributes{}
		for k, v := range r.Attributes {
			full[k] = v
		}
		return full
	}), nil
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

func (h *users) Replace(r *http.Request, id string, a scim.ResourceAttributes) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	p, err := fromAttributes(a)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.UpdateProvisionedUser(r.Context(), n, p, h.instance)
	if err != nil {
		return scim.Resource{}, scimError(err, id)
	}
	return userResource(u), nil
}

func (h *users) Delete(r *http.Request, id string) error {
	n, err := parseID(id)
	if err != nil {
		return err
	}
	return scimError(h.st.DeleteProvisionedUser(r.Context(), n, h.instance), id)
}

// Patch applies Okta's and Entra's operations on a User: replace (with a
// path, or a value object of attributes), add and remove of simple
// attributes. The result is stored as a whole, so a deactivation happens
// as with a PUT.
func (h *users) Patch(r *http.Request, id string, ops []scim.PatchOperation) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.ProvisionedUser(r.Context(), n)
	if err != nil {
		return scim.Resource{}, scimError(err, id)
	}
	res := userResource(u)
	a := res.Attributes
	if res.ExternalID.Present() {
		a["externalId"] = res.ExternalID.Value()
	}
	for _, op := range ops {
		if op.Path == nil {
			values, ok := op.Value.(map[string]any)
			if !ok {
				return scim.Resource{}, scimerrors.ScimErrorInvalidValue
			}
			for k, v := range values {
				a[k] = v
			}
			continue
		}
		if op.Path.ValueExpression != nil {
			return scim.Resource{}, scimerrors.ScimErrorInvalidPath
		}
		name := op.Path.AttributePath.AttributeName
		if sub := op.Path.AttributePath.SubAttribute; sub != nil {
			parent, _ := a[name].(map[string]any)
			if parent == nil {
				parent = map[string]any{}
			}
			if op.Op == scim.PatchOperationRemove {
				delete(parent, *sub)
			} else {
				parent[*sub] = op.Value
			}
			a[name] = parent
			continue
		}
		if op.Op == scim.PatchOperationRemove {
			delete(a, name)
		} else {
			a[name] = op.Value
		}
	}
	p, err := fromAttributes(a)
	if err != nil {
		return scim.Resource{}, err
	}
	updated, err := h.st.UpdateProvisionedUser(r.Context(), n, p, h.instance)
	if err != nil {
		return scim.Resource{}, scimError(err, id)
	}
	return userResource(updated), nil
}

// groups maps SCIM Groups to teams.
type groups struct {
	st       *store.Store
	instance string
}

func groupResource(g *store.ProvisionedGroup) scim.Resource {
	members := []any{}
	for _, m := range g.Members {
		members = append(members, map[string]any{"value": strconv.FormatInt(m.ID, 10), "display": m.Name})
	}
	r := scim.Resource{ID: strconv.FormatInt(g.ID, 10),
		Attributes: scim.ResourceAttributes{"displayName": g.DisplayName, "members": members},
		Meta:       scim.Meta{Created: &g.Created, LastModified: &g.Updated}}
	if g.ExternalID != nil {
		r.ExternalID = optional.NewString(*g.ExternalID)
	}
	return r
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
			return nil, scimerrors.ScimErrorBadRequest(fmt.Sprintf("member %q is not a provisioned user's id", s))
		}
		ids = append(ids, n)
	}
	return ids, nil
}

func (h *groups) Create(r *http.Request, a scim.ResourceAttributes) (scim.Resource, error) {
	name, _ := a["displayName"].(string)
	external, _ := a["externalId"].(string)
	members, err := memberIDs(a["members"])
	if err != nil {
		return scim.Resource{}, err
	}
	g, err := h.st.CreateProvisionedGroup(r.Context(), name, external, members, h.instance)
	if err != nil {
		return scim.Resource{}, scimError(err, "")
	}
	return groupResource(g), nil
}

func (h *groups) Get(r *http.Request, id string) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	g, err := h.st.ProvisionedGroup(r.Context(), n)
	if err != nil {
		return scim.Resource{}, scimError(err, id)
	}
	return groupResource(g), nil
}

func (h *groups) GetAll(r *http.Request, params scim.ListRequestParams) (scim.Page, error) {
	all, err := h.st.ProvisionedGroups(r.Context())
	if err != nil {
		return scim.Page{}, err
	}
	res := make([]scim.Resource, len(all))
	for i := range all {
		res[i] = groupResource(&all[i])
	}
	return filteredPage(res, params, func(r scim.Resource) scim.ResourceAttributes {
		return scim.ResourceAttributes{"displayName": r.Attributes["displayName"]}
	}), nil
}

func (h *groups) Replace(r *http.Request, id string, a scim.ResourceAttributes) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	name, _ := a["displayName"].(string)
	members, err := memberIDs(a["members"])
	if err != nil {
		return scim.Resource{}, err
	}
	g, err := h.st.ChangeProvisionedGroup(r.Context(), n, store.GroupChange{DisplayName: name, Replace: true, Members: members}, h.instance)
	if err != nil {
		return scim.Resource{}, scimError(err, id)
	}
	return groupResource(g), nil
}

func (h *groups) Delete(r *http.Request, id string) error {
	n, err := parseID(id)
	if err != nil {
		return err
	}
	return scimError(h.st.DeleteProvisionedGroup(r.Context(), n, h.instance), id)
}

// Patch applies the membership and name changes Okta and Entra send:
// add/remove on members (Okta removes with members[value eq "ID"], Entra
// with a value list), replace of displayName or of the members.
func (h *groups) Patch(r *http.Request, id string, ops []scim.PatchOperation) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	var ch store.GroupChange
	for _, op := range ops {
		path := ""
		if op.Path != nil {
			path = op.Path.AttributePath.AttributeName
		}
		switch {
		case op.Path == nil:
			values, _ := op.Value.(map[string]any)
			if name, ok := values["displayName"].(string); ok {
				ch.DisplayName = name
			}
			if m, ok := values["members"]; ok {
				ids, err := memberIDs(m)
				if err != nil {
					return scim.Resource{}, err
				}
				if op.Op == scim.PatchOperationReplace {
					ch.Replace, ch.Members = true, ids
				} else {
					ch.Add = append(ch.Add, ids...)
				}
			}
		case path == "displayName":
			ch.DisplayName, _ = op.Value.(string)
		case path == "members" && op.Path.ValueExpression != nil:
			ids, err := memberFromFilter(fmt.Sprint(op.Path.ValueExpression))
			if err != nil {
				return scim.Resource{}, err
			}
			if op.Op != scim.PatchOperationRemove {
				return scim.Resource{}, scimerrors.ScimErrorInvalidPath
			}
			ch.Remove = append(ch.Remove, ids...)
		case path == "members":
			ids, err := memberIDs(op.Value)
			if err != nil {
				return scim.Resource{}, err
			}
			switch op.Op {
			case scim.PatchOperationAdd:
				ch.Add = append(ch.Add, ids...)
			case scim.PatchOperationRemove:
				if op.Value == nil {
					ch.Replace, ch.Members = true, nil // remove every member
				}
				ch.Remove = append(ch.Remove, ids...)
			case scim.PatchOperationReplace:
				ch.Replace, ch.Members = true, ids
			}
		default:
			return scim.Resource{}, scimerrors.ScimErrorInvalidPath
		}
	}
	g, err := h.st.ChangeProvisionedGroup(r.Context(), n, ch, h.instance)
	if err != nil {
		return scim.Resource{}, scimError(err, id)
	}
	return groupResource(g), nil
}

// memberFromFilter reads the id of `value eq "ID"`, the filter Okta
// removes a member with.
func memberFromFilter(expr string) ([]int64, error) {
	_, v, ok := strings.Cut(expr, " eq ")
	if !ok || !strings.HasPrefix(strings.TrimSpace(expr), "value") {
		return nil, scimerrors.ScimErrorInvalidFilter
	}
	n, err := strconv.ParseInt(strings.Trim(strings.TrimSpace(v), `"`), 10, 64)
	if err != nil {
		return nil, scimerrors.ScimErrorInvalidFilter
	}
	return []int64{n}, nil
}
