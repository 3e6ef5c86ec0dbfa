package provision

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/elimity-com/scim"
	scimerrors "github.com/elimity-com/scim/errors"
	"github.com/elimity-com/scim/optional"

	"github.com/mcp-rounds/rounds/store"
)

// groups maps SCIM Groups to teams. A provider changes and deletes only
// the teams its groups made (see store.CreateProvisionedGroup).
type groups struct {
	*service
	hidden hidden // nothing of a Group is kept but its name and members
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

// checked scrubs a Group's attributes and refuses any too long.
func (h *groups) checked(a scim.ResourceAttributes) error {
	h.hidden.scrub(a)
	return checkLengths(a)
}

func (h *groups) Create(r *http.Request, a scim.ResourceAttributes) (scim.Resource, error) {
	if err := h.checked(a); err != nil {
		return scim.Resource{}, err
	}
	name, _ := a["displayName"].(string)
	external, _ := a["externalId"].(string)
	members, err := memberIDs(a["members"])
	if err != nil {
		return scim.Resource{}, err
	}
	g, err := h.st.CreateProvisionedGroup(r.Context(), name, external, members, h.by(r))
	if err != nil {
		return scim.Resource{}, h.fail(r, err, "")
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
		return scim.Resource{}, h.fail(r, err, id)
	}
	return groupResource(g), nil
}

func (h *groups) GetAll(r *http.Request, params scim.ListRequestParams) (scim.Page, error) {
	all, err := h.st.ProvisionedGroups(r.Context())
	if err != nil {
		return scim.Page{}, h.fail(r, err, "")
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
	if err := h.checked(a); err != nil {
		return scim.Resource{}, err
	}
	name, _ := a["displayName"].(string)
	members, err := memberIDs(a["members"])
	if err != nil {
		return scim.Resource{}, err
	}
	g, err := h.st.ChangeProvisionedGroup(r.Context(), n, store.GroupChange{DisplayName: name, Replace: true, Members: members}, h.by(r))
	if err != nil {
		return scim.Resource{}, h.fail(r, err, id)
	}
	return groupResource(g), nil
}

func (h *groups) Delete(r *http.Request, id string) error {
	n, err := parseID(id)
	if err != nil {
		return err
	}
	return h.fail(r, h.st.DeleteProvisionedGroup(r.Context(), n, h.by(r)), id)
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
		if err := applyGroupOp(&ch, op); err != nil {
			return scim.Resource{}, err
		}
	}
	if err := checkLengths(map[string]any{"displayName": ch.DisplayName}); err != nil {
		return scim.Resource{}, err
	}
	g, err := h.st.ChangeProvisionedGroup(r.Context(), n, ch, h.by(r))
	if err != nil {
		return scim.Resource{}, h.fail(r, err, id)
	}
	return groupResource(g), nil
}

// applyGroupOp adds one PATCH operation to a group's change.
func applyGroupOp(ch *store.GroupChange, op scim.PatchOperation) error {
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
				return err
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
			return err
		}
		if op.Op != scim.PatchOperationRemove {
			return scimerrors.ScimErrorInvalidPath
		}
		ch.Remove = append(ch.Remove, ids...)
	case path == "members":
		ids, err := memberIDs(op.Value)
		if err != nil {
			return err
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
		return scimerrors.ScimErrorInvalidPath
	}
	return nil
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
