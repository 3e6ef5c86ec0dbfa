package provision

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/elimity-com/scim"
	scimerrors "github.com/elimity-com/scim/errors"
	"github.com/elimity-com/scim/optional"
	"github.com/elimity-com/scim/schema"
	filter "github.com/scim2/filter-parser/v2"

	"github.com/mcp-rounds/rounds/store"
)

// users maps SCIM Users to accounts.
type users struct {
	*service
	hidden hidden
}

// fromAttributes reads what Rounds keeps of a User resource: never what
// is hidden (the password), and nothing too long.
func (h *users) fromAttributes(a scim.ResourceAttributes) (store.ProvisionUser, error) {
	h.hidden.scrub(a)
	if err := checkLengths(a); err != nil {
		return store.ProvisionUser{}, err
	}
	var p store.ProvisionUser
	v, _ := field(a, "userName")
	if p.UserName, _ = v.(string); p.UserName == "" {
		return p, invalidValue("userName is required.")
	}
	v, _ = field(a, "externalId")
	p.ExternalID, _ = v.(string)
	if v, ok := field(a, "active"); ok && v != nil {
		active := truthy(v)
		p.Active = &active
	}
	v, _ = field(a, "emails")
	p.Email = primaryEmail(v)
	b, err := json.Marshal(a)
	p.Attributes = b
	return p, err
}

// field is the value of the attribute name in a, named in any case, as
// a PATCH may name it.
func field(a map[string]any, name string) (any, bool) {
	if v, ok := a[name]; ok {
		return v, true
	}
	for k, v := range a {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return nil, false
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

// resource is the User a provisioned person is. What is hidden is taken
// out here too, whatever was kept.
func (h *users) resource(u *store.ProvisionedUser) scim.Resource {
	attrs := scim.ResourceAttributes{}
	_ = json.Unmarshal(u.Attributes, &attrs)
	h.hidden.scrub(attrs)
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
	p, err := h.fromAttributes(a)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.CreateProvisionedUser(r.Context(), p, h.by(r))
	if err != nil {
		return scim.Resource{}, h.fail(r, err, "")
	}
	return h.resource(u), nil
}

func (h *users) Get(r *http.Request, id string) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.ProvisionedUser(r.Context(), n)
	if err != nil {
		return scim.Resource{}, h.fail(r, err, id)
	}
	return h.resource(u), nil
}

// GetAll lists people a page at a time. The lookups providers make
// (userName eq, externalId eq, alone) are asked of Postgres, which reads
// the rows they find by their index; any other filter is matched here,
// over every person.
func (h *users) GetAll(r *http.Request, params scim.ListRequestParams) (scim.Page, error) {
	q, exact := lookup(params)
	if !exact {
		q.Limit = -1
	} else {
		q.Offset, q.Limit = max(params.StartIndex, 1)-1, max(params.Count, 0)
	}
	found, total, err := h.st.ProvisionedUsers(r.Context(), q)
	if err != nil {
		return scim.Page{}, h.fail(r, err, "")
	}
	res := make([]scim.Resource, len(found))
	for i := range found {
		res[i] = h.resource(&found[i])
	}
	if exact {
		return scim.Page{TotalResults: total, Resources: res}, nil
	}
	return filteredPage(res, params, func(r scim.Resource) scim.ResourceAttributes {
		full := scim.ResourceAttributes{}
		for k, v := range r.Attributes {
			full[k] = v
		}
		return full
	}), nil
}

// lookup reads the store's query from a request's filter, and whether it
// is the whole filter: none, or userName or externalId eq a string.
func lookup(params scim.ListRequestParams) (store.ProvisionedUserQuery, bool) {
	var q store.ProvisionedUserQuery
	if params.FilterValidator == nil {
		return q, true
	}
	e, ok := params.FilterValidator.GetFilter().(*filter.AttributeExpression)
	if !ok || e.Operator != filter.EQ || e.AttributePath.SubAttribute != nil {
		return q, false
	}
	if uri := e.AttributePath.URI(); uri != "" && !strings.EqualFold(uri, schema.UserSchema) {
		return q, false
	}
	value, ok := e.CompareValue.(string)
	switch name := e.AttributePath.AttributeName; {
	case !ok:
		return q, false
	case strings.EqualFold(name, "userName"):
		q.UserName = value
	case strings.EqualFold(name, "externalId"):
		q.ExternalID = value
	default:
		return q, false
	}
	// An empty value matches nobody, not everybody.
	return q, value != ""
}

func (h *users) Replace(r *http.Request, id string, a scim.ResourceAttributes) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	p, err := h.fromAttributes(a)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.UpdateProvisionedUser(r.Context(), n, p, h.by(r))
	if err != nil {
		return scim.Resource{}, h.fail(r, err, id)
	}
	return h.resource(u), nil
}

func (h *users) Delete(r *http.Request, id string) error {
	n, err := parseID(id)
	if err != nil {
		return err
	}
	return h.fail(r, h.st.DeleteProvisionedUser(r.Context(), n, h.by(r)), id)
}

// Patch applies Okta's and Entra's operations on a User: replace (with a
// path, or a value object of attributes), add and remove of simple
// attributes. The result is stored as a whole, as a PUT is; active
// changes only when an operation names it.
func (h *users) Patch(r *http.Request, id string, ops []scim.PatchOperation) (scim.Resource, error) {
	n, err := parseID(id)
	if err != nil {
		return scim.Resource{}, err
	}
	u, err := h.st.ProvisionedUser(r.Context(), n)
	if err != nil {
		return scim.Resource{}, h.fail(r, err, id)
	}
	res := h.resource(u)
	a := res.Attributes
	delete(a, "active") // as it is, unless an operation says
	if res.ExternalID.Present() {
		a["externalId"] = res.ExternalID.Value()
	}
	for _, op := range ops {
		if err := applyUserOp(a, op); err != nil {
			return scim.Resource{}, err
		}
	}
	p, err := h.fromAttributes(a)
	if err != nil {
		return scim.Resource{}, err
	}
	updated, err := h.st.UpdateProvisionedUser(r.Context(), n, p, h.by(r))
	if err != nil {
		return scim.Resource{}, h.fail(r, err, id)
	}
	return h.resource(updated), nil
}

// applyUserOp applies one PATCH operation to a User's attributes.
func applyUserOp(a scim.ResourceAttributes, op scim.PatchOperation) error {
	if op.Path == nil {
		values, ok := op.Value.(map[string]any)
		if !ok {
			return scimerrors.ScimErrorInvalidValue
		}
		for k, v := range values {
			a[k] = v
		}
		return nil
	}
	if op.Path.ValueExpression != nil {
		return scimerrors.ScimErrorInvalidPath
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
		return nil
	}
	if op.Op == scim.PatchOperationRemove {
		delete(a, name)
	} else {
		a[name] = op.Value
	}
	return nil
}
