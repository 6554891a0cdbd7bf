package fakelinear

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/vektah/gqlparser/v2/ast"
)

// gqlError is an error the fake answers with: Linear's code and message.
type gqlError struct{ code, msg string }

func validation(format string, args ...any) *gqlError {
	return &gqlError{code: "GRAPHQL_VALIDATION_FAILED", msg: fmt.Sprintf(format, args...)}
}

func notFound(typ string) *gqlError {
	return &gqlError{code: "INVALID_INPUT", msg: "Entity not found: " + typ + " - Could not find referenced " + typ + "."}
}

// object is a GraphQL object the fake can resolve fields of.
type object interface {
	typeName() string
	field(ex *exec, name string, args map[string]any) (any, *gqlError)
}

// exec executes one operation against the server's state; the server's lock is held.
type exec struct {
	s       *Server
	doc     *ast.QueryDocument
	op      *ast.OperationDefinition
	vars    map[string]any
	objects int
	fields  int
}

func (ex *exec) selection(obj object, set ast.SelectionSet) (map[string]any, *gqlError) {
	ex.objects++
	out := map[string]any{}
	if err := ex.into(out, obj, set); err != nil {
		return nil, err
	}
	return out, nil
}

func (ex *exec) into(out map[string]any, obj object, set ast.SelectionSet) *gqlError {
	for _, sel := range set {
		switch sel := sel.(type) {
		case *ast.Field:
			ex.fields++
			key := sel.Alias
			if key == "" {
				key = sel.Name
			}
			if sel.Name == "__typename" {
				out[key] = obj.typeName()
				continue
			}
			args := map[string]any{}
			for _, a := range sel.Arguments {
				args[a.Name] = ex.value(a.Value)
			}
			v, err := obj.field(ex, sel.Name, args)
			if err != nil {
				return err
			}
			r, err := ex.result(v, sel)
			if err != nil {
				return err
			}
			out[key] = r
		case *ast.InlineFragment:
			if sel.TypeCondition == "" || sel.TypeCondition == obj.typeName() {
				if err := ex.into(out, obj, sel.SelectionSet); err != nil {
					return err
				}
			}
		case *ast.FragmentSpread:
			f := ex.doc.Fragments.ForName(sel.Name)
			if f == nil {
				return validation("Unknown fragment %q.", sel.Name)
			}
			if f.TypeCondition == obj.typeName() {
				if err := ex.into(out, obj, f.SelectionSet); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func (ex *exec) result(v any, f *ast.Field) (any, *gqlError) {
	switch v := v.(type) {
	case nil:
		return nil, nil
	case object:
		if len(f.SelectionSet) == 0 {
			return nil, validation("Field %q of type %q must have a selection of subfields.", f.Name, v.typeName())
		}
		return ex.selection(v, f.SelectionSet)
	case []object:
		list := make([]any, 0, len(v))
		for _, o := range v {
			r, err := ex.result(o, f)
			if err != nil {
				return nil, err
			}
			list = append(list, r)
		}
		return list, nil
	}
	if len(f.SelectionSet) > 0 {
		return nil, validation("Field %q must not have a selection since it is a scalar.", f.Name)
	}
	return v, nil
}

// value resolves an argument value: literals and variables, with a variable's default.
func (ex *exec) value(v *ast.Value) any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case ast.Variable:
		if x, ok := ex.vars[v.Raw]; ok {
			return x
		}
		if d := ex.op.VariableDefinitions.ForName(v.Raw); d != nil && d.DefaultValue != nil {
			return ex.value(d.DefaultValue)
		}
		return nil
	case ast.IntValue, ast.FloatValue:
		f, _ := strconv.ParseFloat(v.Raw, 64)
		return f
	case ast.BooleanValue:
		return v.Raw == "true"
	case ast.NullValue:
		return nil
	case ast.ListValue:
		out := []any{}
		for _, c := range v.Children {
			out = append(out, ex.value(c.Value))
		}
		return out
	case ast.ObjectValue:
		out := map[string]any{}
		for _, c := range v.Children {
			out[c.Name] = ex.value(c.Value)
		}
		return out
	}
	return v.Raw // strings, block strings, enums
}

const timeLayout = "2006-01-02T15:04:05.000Z"

func ts(t time.Time) string { return t.UTC().Format(timeLayout) }

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

// connection pages nodes: after is the id of the last node of the previous page.
func connection(nodes []object, ids []string, args map[string]any) (object, *gqlError) {
	first := 50
	if n, ok := num(args["first"]); ok {
		if n < 0 || n > 250 {
			return nil, &gqlError{code: "INVALID_INPUT", msg: "first must be between 0 and 250"}
		}
		first = int(n)
	}
	start := 0
	if after := str(args["after"]); after != "" {
		i := slices.Index(ids, after)
		if i < 0 {
			return nil, &gqlError{code: "INVALID_INPUT", msg: "Invalid cursor"}
		}
		start = i + 1
	}
	end := min(start+first, len(nodes))
	c := &conn{nodes: nodes[start:end], hasNext: end < len(nodes)}
	if end > start {
		c.end = ids[end-1]
	}
	return c, nil
}

type conn struct {
	nodes   []object
	hasNext bool
	end     string
}

func (c *conn) typeName() string { return "Connection" }
func (c *conn) field(_ *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "nodes":
		return c.nodes, nil
	case "pageInfo":
		return &pageInfo{c}, nil
	}
	return nil, validation("Cannot query field %q on a connection.", name)
}

type pageInfo struct{ c *conn }

func (p *pageInfo) typeName() string { return "PageInfo" }
func (p *pageInfo) field(_ *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "hasNextPage":
		return p.c.hasNext, nil
	case "hasPreviousPage":
		return false, nil
	case "endCursor":
		if p.c.end == "" {
			return nil, nil
		}
		return p.c.end, nil
	}
	return nil, validation("Cannot query field %q on type \"PageInfo\".", name)
}

// root is Query or Mutation.
type root struct{ mutation bool }

func (r root) typeName() string {
	if r.mutation {
		return "Mutation"
	}
	return "Query"
}

func (r root) field(ex *exec, name string, args map[string]any) (any, *gqlError) {
	s := ex.s
	if r.mutation {
		switch name {
		case "issueUpdate":
			return ex.issueUpdate(args)
		case "commentCreate":
			return ex.commentCreate(args)
		case "issueAddLabel":
			return ex.issueAddLabel(args)
		}
		return nil, validation("Cannot query field %q on type \"Mutation\".", name)
	}
	switch name {
	case "viewer":
		return &userObj{s.user(s.viewer)}, nil
	case "issue":
		is := s.issue(str(args["id"]))
		if is == nil {
			return nil, notFound("Issue")
		}
		return &issueObj{is}, nil
	case "issues":
		var nodes []object
		var ids []string
		list := slices.Clone(s.issues)
		sort.SliceStable(list, func(i, j int) bool { return list[i].CreatedAt.Before(list[j].CreatedAt) })
		for _, is := range list {
			ok, err := ex.matchIssue(is, args["filter"])
			if err != nil {
				return nil, err
			}
			if ok {
				nodes, ids = append(nodes, &issueObj{is}), append(ids, is.ID)
			}
		}
		return connection(nodes, ids, args)
	case "workflowStates":
		var nodes []object
		var ids []string
		for _, st := range s.states {
			ok, err := ex.matchState(st, args["filter"])
			if err != nil {
				return nil, err
			}
			if ok {
				nodes, ids = append(nodes, &stateObj{st}), append(ids, st.ID)
			}
		}
		return connection(nodes, ids, args)
	case "team":
		for _, t := range s.teams {
			if t.ID == str(args["id"]) || strings.EqualFold(t.Key, str(args["id"])) {
				return &teamObj{t}, nil
			}
		}
		return nil, notFound("Team")
	case "project":
		for _, is := range s.issues {
			if p := is.ProjectSlug; p != "" && (str(args["id"]) == p || str(args["id"]) == "project-"+p) {
				return &projectObj{p}, nil
			}
		}
		return nil, notFound("Project")
	case "issueLabels":
		var nodes []object
		var ids []string
		for _, l := range s.labels {
			ok, err := ex.matchLabel(l, args["filter"])
			if err != nil {
				return nil, err
			}
			if ok {
				nodes, ids = append(nodes, &labelObj{l.ID, l.Name, l}), append(ids, l.ID)
			}
		}
		return connection(nodes, ids, args)
	case "teams":
		var nodes []object
		var ids []string
		for _, t := range s.teams {
			nodes, ids = append(nodes, &teamObj{t}), append(ids, t.ID)
		}
		return connection(nodes, ids, args)
	}
	return nil, validation("Cannot query field %q on type \"Query\".", name)
}

func (ex *exec) issueUpdate(args map[string]any) (any, *gqlError) {
	s := ex.s
	is := s.issue(str(args["id"]))
	if is == nil {
		return nil, notFound("Issue")
	}
	input, _ := args["input"].(map[string]any)
	for k, v := range input {
		switch k {
		case "stateId":
			st := s.state(str(v))
			if st == nil || st.TeamID != is.TeamID {
				return nil, notFound("WorkflowState")
			}
			is.StateID = st.ID
		case "title":
			is.Title = str(v)
		case "description":
			is.Description = str(v)
		case "priority":
			is.Priority, _ = num(v)
		default:
			return nil, validation("Field %q is not defined by type \"IssueUpdateInput\".", k)
		}
	}
	is.UpdatedAt = s.clock().UTC()
	return &payload{issue: is}, nil
}

func (ex *exec) commentCreate(args map[string]any) (any, *gqlError) {
	s := ex.s
	input, _ := args["input"].(map[string]any)
	for k := range input {
		if k != "issueId" && k != "body" {
			return nil, validation("Field %q is not defined by type \"CommentCreateInput\".", k)
		}
	}
	is := s.issue(str(input["issueId"]))
	if is == nil {
		return nil, notFound("Issue")
	}
	c := &Comment{ID: s.nextID("comment"), IssueID: is.ID, UserID: s.viewer, Body: str(input["body"]), CreatedAt: s.clock().UTC()}
	s.comments = append(s.comments, c)
	return &payload{comment: c}, nil
}

// issueAddLabel puts a label on an issue by the label's id, as Linear does: the label
// must be the issue's team's or the workspace's, and not a group. A label the issue
// carries already changes nothing.
func (ex *exec) issueAddLabel(args map[string]any) (any, *gqlError) {
	s := ex.s
	is := s.issue(str(args["id"]))
	if is == nil {
		return nil, notFound("Issue")
	}
	var l *Label
	for _, x := range s.labels {
		if x.ID == str(args["labelId"]) {
			l = x
		}
	}
	switch {
	case l == nil:
		return nil, notFound("IssueLabel")
	case l.IsGroup:
		return nil, &gqlError{code: "INVALID_INPUT", msg: "Label groups cannot be applied to issues."}
	case l.TeamID != "" && l.TeamID != is.TeamID:
		return nil, &gqlError{code: "INVALID_INPUT", msg: "Label does not belong to the issue's team."}
	}
	if !slices.Contains(is.Labels, l.Name) {
		is.Labels = append(is.Labels, l.Name)
		is.UpdatedAt = s.clock().UTC()
	}
	return &payload{issue: is}, nil
}

// matchList applies a filter's "and" or "or" (k): the list v of sub-filters, each
// matched against x by match.
func matchList[T any](x T, k string, v any, match func(T, any) (bool, *gqlError)) (bool, *gqlError) {
	list, _ := v.([]any)
	ok := k == "and"
	for _, sub := range list {
		m, err := match(x, sub)
		if err != nil {
			return false, err
		}
		if k == "and" && !m {
			ok = false
		}
		if k == "or" && m {
			ok = true
		}
	}
	return ok, nil
}

// matchLabel applies an IssueLabelFilter: id, name, isGroup, team (id, key, name, null),
// and, or.
func (ex *exec) matchLabel(l *Label, filter any) (bool, *gqlError) {
	f, _ := filter.(map[string]any)
	for k, v := range f {
		var ok bool
		var err *gqlError
		switch k {
		case "and", "or":
			ok, err = matchList(l, k, v, ex.matchLabel)
		case "id", "name", "isGroup":
			ok, err = compare(map[string]any{"id": l.ID, "name": l.Name, "isGroup": l.IsGroup}[k], v)
		case "team":
			cmp, _ := v.(map[string]any)
			if null, has := cmp["null"]; has {
				if ok = (l.TeamID == "") == (null == true); !ok {
					break
				}
				cmp = maps.Clone(cmp)
				delete(cmp, "null")
			}
			if len(cmp) == 0 {
				ok = true
				break
			}
			if l.TeamID == "" {
				ok = false
				break
			}
			t := ex.s.team(l.TeamID)
			ok, err = matchFields(cmp, map[string]any{"id": t.ID, "key": t.Key, "name": t.Name}, "NullableTeamFilter")
		default:
			return false, validation("Field %q is not defined by type \"IssueLabelFilter\".", k)
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// matchIssue applies an IssueFilter.
func (ex *exec) matchIssue(is *Issue, filter any) (bool, *gqlError) {
	f, _ := filter.(map[string]any)
	s := ex.s
	for k, v := range f {
		var ok bool
		var err *gqlError
		switch k {
		case "and", "or":
			ok, err = matchList(is, k, v, ex.matchIssue)
		case "id":
			ok, err = compare(is.ID, v)
		case "number":
			ok, err = compare(float64(is.Number), v)
		case "title":
			ok, err = compare(is.Title, v)
		case "team":
			t := s.team(is.TeamID)
			ok, err = matchFields(v, map[string]any{"id": t.ID, "key": t.Key, "name": t.Name}, "TeamFilter")
		case "state":
			st := s.state(is.StateID)
			ok, err = matchFields(v, map[string]any{"id": st.ID, "name": st.Name, "type": st.Type}, "WorkflowStateFilter")
		case "assignee":
			u := s.user(is.AssigneeID)
			if is.AssigneeID == "" || u == nil {
				ok = false
				break
			}
			ok, err = matchFields(v, map[string]any{"id": u.ID, "email": u.Email, "isMe": u.ID == s.viewer}, "NullableUserFilter")
		case "project":
			if is.ProjectSlug == "" {
				ok = false
				break
			}
			ok, err = matchFields(v, map[string]any{"slugId": is.ProjectSlug}, "NullableProjectFilter")
		default:
			return false, validation("Field %q is not defined by type \"IssueFilter\".", k)
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func (ex *exec) matchState(st *State, filter any) (bool, *gqlError) {
	f, _ := filter.(map[string]any)
	for k, v := range f {
		var ok bool
		var err *gqlError
		switch k {
		case "team":
			t := ex.s.team(st.TeamID)
			ok, err = matchFields(v, map[string]any{"id": t.ID, "key": t.Key}, "TeamFilter")
		case "name", "type", "id":
			ok, err = compare(map[string]any{"name": st.Name, "type": st.Type, "id": st.ID}[k], v)
		default:
			return false, validation("Field %q is not defined by type \"WorkflowStateFilter\".", k)
		}
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

func matchFields(filter any, values map[string]any, typ string) (bool, *gqlError) {
	f, _ := filter.(map[string]any)
	for k, cmp := range f {
		v, known := values[k]
		if !known {
			return false, validation("Field %q is not defined by type %q.", k, typ)
		}
		ok, err := compare(v, cmp)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// compare applies a comparator (eq, neq, in, nin, eqIgnoreCase) to v.
func compare(v any, comparator any) (bool, *gqlError) {
	c, _ := comparator.(map[string]any)
	eq := func(a, b any) bool {
		if x, ok := num(a); ok {
			y, ok := num(b)
			return ok && x == y
		}
		return a == b
	}
	for op, want := range c {
		var ok bool
		switch op {
		case "eq":
			ok = eq(v, want)
		case "neq":
			ok = !eq(v, want)
		case "eqIgnoreCase":
			ok = strings.EqualFold(str(v), str(want))
		case "in", "nin":
			list, _ := want.([]any)
			ok = slices.ContainsFunc(list, func(x any) bool { return eq(v, x) }) == (op == "in")
		default:
			return false, validation("Field %q is not defined by the comparator.", op)
		}
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

type issueObj struct{ is *Issue }

func (o *issueObj) typeName() string { return "Issue" }
func (o *issueObj) field(ex *exec, name string, args map[string]any) (any, *gqlError) {
	s, is := ex.s, o.is
	switch name {
	case "id":
		return is.ID, nil
	case "identifier":
		return is.Identifier, nil
	case "number":
		return float64(is.Number), nil
	case "title":
		return is.Title, nil
	case "description":
		if is.Description == "" {
			return nil, nil
		}
		return is.Description, nil
	case "priority":
		return is.Priority, nil
	case "url":
		return is.URL, nil
	case "branchName":
		return is.BranchName, nil
	case "createdAt":
		return ts(is.CreatedAt), nil
	case "updatedAt":
		return ts(is.UpdatedAt), nil
	case "state":
		return &stateObj{s.state(is.StateID)}, nil
	case "team":
		return &teamObj{s.team(is.TeamID)}, nil
	case "assignee":
		if u := s.user(is.AssigneeID); u != nil {
			return &userObj{u}, nil
		}
		return nil, nil
	case "project":
		if is.ProjectSlug == "" {
			return nil, nil
		}
		return &projectObj{is.ProjectSlug}, nil
	case "parent":
		if p := s.issue(is.ParentID); p != nil && is.ParentID != "" {
			return &issueObj{p}, nil
		}
		return nil, nil
	case "labels":
		var nodes []object
		var ids []string
		for _, name := range is.Labels {
			lo := &labelObj{id: "label-" + name, name: name, l: s.labelOf(is.TeamID, name)}
			if lo.l != nil {
				lo.id = lo.l.ID
			}
			nodes, ids = append(nodes, lo), append(ids, lo.id)
		}
		return connection(nodes, ids, args)
	case "relations", "inverseRelations":
		var nodes []object
		var ids []string
		for _, r := range s.relations {
			if (name == "relations" && r.IssueID == is.ID) || (name == "inverseRelations" && r.RelatedID == is.ID) {
				nodes, ids = append(nodes, &relationObj{r}), append(ids, r.ID)
			}
		}
		return connection(nodes, ids, args)
	case "comments":
		var nodes []object
		var ids []string
		for _, c := range s.comments {
			if c.IssueID == is.ID {
				nodes, ids = append(nodes, &commentObj{c}), append(ids, c.ID)
			}
		}
		return connection(nodes, ids, args)
	}
	return nil, validation("Cannot query field %q on type \"Issue\".", name)
}

type stateObj struct{ st *State }

func (o *stateObj) typeName() string { return "WorkflowState" }
func (o *stateObj) field(ex *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "id":
		return o.st.ID, nil
	case "name":
		return o.st.Name, nil
	case "type":
		return o.st.Type, nil
	case "team":
		return &teamObj{ex.s.team(o.st.TeamID)}, nil
	}
	return nil, validation("Cannot query field %q on type \"WorkflowState\".", name)
}

type teamObj struct{ t *Team }

func (o *teamObj) typeName() string { return "Team" }
func (o *teamObj) field(ex *exec, name string, args map[string]any) (any, *gqlError) {
	switch name {
	case "id":
		return o.t.ID, nil
	case "key":
		return o.t.Key, nil
	case "name":
		return o.t.Name, nil
	case "states":
		var nodes []object
		var ids []string
		for _, st := range ex.s.states {
			if st.TeamID == o.t.ID {
				nodes, ids = append(nodes, &stateObj{st}), append(ids, st.ID)
			}
		}
		return connection(nodes, ids, args)
	}
	return nil, validation("Cannot query field %q on type \"Team\".", name)
}

type userObj struct{ u *User }

func (o *userObj) typeName() string { return "User" }
func (o *userObj) field(ex *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "id":
		return o.u.ID, nil
	case "name":
		return o.u.Name, nil
	case "displayName":
		return o.u.DisplayName, nil
	case "email":
		return o.u.Email, nil
	case "isMe":
		return o.u.ID == ex.s.viewer, nil
	}
	return nil, validation("Cannot query field %q on type \"User\".", name)
}

type projectObj struct{ slug string }

func (o *projectObj) typeName() string { return "Project" }
func (o *projectObj) field(_ *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "slugId":
		return o.slug, nil
	case "id":
		return "project-" + o.slug, nil
	}
	return nil, validation("Cannot query field %q on type \"Project\".", name)
}

// labelObj is an IssueLabel: a Label, or a name an issue carries that no Label was
// created for (l nil; its id is made up).
type labelObj struct {
	id, name string
	l        *Label
}

func (o *labelObj) typeName() string { return "IssueLabel" }
func (o *labelObj) field(ex *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "id":
		return o.id, nil
	case "name":
		return o.name, nil
	case "isGroup":
		return o.l != nil && o.l.IsGroup, nil
	case "team":
		if o.l == nil || o.l.TeamID == "" {
			return nil, nil
		}
		return &teamObj{ex.s.team(o.l.TeamID)}, nil
	}
	return nil, validation("Cannot query field %q on type \"IssueLabel\".", name)
}

type relationObj struct{ r *Relation }

func (o *relationObj) typeName() string { return "IssueRelation" }
func (o *relationObj) field(ex *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "id":
		return o.r.ID, nil
	case "type":
		return o.r.Type, nil
	case "issue":
		return &issueObj{ex.s.issue(o.r.IssueID)}, nil
	case "relatedIssue":
		return &issueObj{ex.s.issue(o.r.RelatedID)}, nil
	}
	return nil, validation("Cannot query field %q on type \"IssueRelation\".", name)
}

type commentObj struct{ c *Comment }

func (o *commentObj) typeName() string { return "Comment" }
func (o *commentObj) field(ex *exec, name string, _ map[string]any) (any, *gqlError) {
	c := o.c
	switch name {
	case "id":
		return c.ID, nil
	case "body":
		return c.Body, nil
	case "createdAt", "updatedAt":
		return ts(c.CreatedAt), nil
	case "user":
		if u := ex.s.user(c.UserID); u != nil {
			return &userObj{u}, nil
		}
		return nil, nil
	case "botActor":
		if c.BotName == "" {
			return nil, nil
		}
		return &botObj{c.BotName}, nil
	case "issue":
		return &issueObj{ex.s.issue(c.IssueID)}, nil
	}
	return nil, validation("Cannot query field %q on type \"Comment\".", name)
}

type botObj struct{ name string }

func (o *botObj) typeName() string { return "ActorBot" }
func (o *botObj) field(_ *exec, name string, _ map[string]any) (any, *gqlError) {
	switch name {
	case "name":
		return o.name, nil
	case "id":
		return "bot-" + o.name, nil
	}
	return nil, validation("Cannot query field %q on type \"ActorBot\".", name)
}

// payload is IssuePayload or CommentPayload.
type payload struct {
	issue   *Issue
	comment *Comment
}

func (o *payload) typeName() string {
	if o.comment != nil {
		return "CommentPayload"
	}
	return "IssuePayload"
}

func (o *payload) field(_ *exec, name string, _ map[string]any) (any, *gqlError) {
	switch {
	case name == "success":
		return true, nil
	case name == "lastSyncId":
		return float64(1), nil
	case name == "issue" && o.issue != nil:
		return &issueObj{o.issue}, nil
	case name == "comment" && o.comment != nil:
		return &commentObj{o.comment}, nil
	}
	return nil, validation("Cannot query field %q on type %q.", name, o.typeName())
}
