package linear

import (
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// What an agent's linear_graphql query may read (docs/agent-tools.md#linear_graphql):
// its own issue and what hangs off it, its team's workflow states, its team and its
// project, and who the daemon's account is. Everything else in the workspace (other
// issues, users and their e-mail addresses, webhooks and their secrets, API keys,
// integrations, the organization) is refused, unless the operator set
// linear.agent_reads: unrestricted.

// viewerFields are the fields of viewer an agent may read.
var viewerFields = []string{"id", "name", "displayName", "__typename"}

// workflowStatesArgs are the arguments of workflowStates besides filter.
var listArgs = []string{"first", "last", "after", "before", "orderBy", "includeArchived"}

// deniedExact are nested fields refused wherever they appear: they lead out of the
// session's issue to the workspace's people and collections.
var deniedExact = []string{"users", "members", "teams", "projects", "memberships", "teammemberships",
	"projectmemberships", "customers", "notifications", "favorites", "initiatives", "roadmaps",
	"cycles", "templates", "auditentries", "parentteam", "subteams"}

// deniedParts are substrings of nested field names refused wherever they appear:
// secrets and credentials, e-mail addresses, the organization, and every connection of
// issues (issues, assignedIssues, createdIssues...), which would reach past the issue.
var deniedParts = []string{"secret", "token", "apikey", "password", "webhook", "integration", "oauth",
	"email", "organization", "invite", "issues"}

func deniedField(name string) bool {
	n := strings.ToLower(name)
	if strings.HasPrefix(n, "__") {
		return n != "__typename"
	}
	for _, d := range deniedExact {
		if n == d {
			return true
		}
	}
	for _, d := range deniedParts {
		if strings.Contains(n, d) {
			return true
		}
	}
	return false
}

// scopeRef is a team or project an agent's query names, to be checked against the
// session issue's own once it is known.
type scopeRef struct {
	field string // workflowStates, team or project
	value string // an id, a team key or a project slug id
}

// readWalker checks the selection sets of an agent's operation.
type readWalker struct {
	r    resolver
	doc  *ast.QueryDocument
	own  func(any) bool
	plan *agentPlan
	// on is the fragments being expanded, against a fragment that spreads itself.
	on map[string]bool
}

// fields flattens a selection set: fragment spreads and inline fragments are expanded
// into the fields they select.
func (w *readWalker) fields(set ast.SelectionSet, out []*ast.Field) ([]*ast.Field, *AgentError) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			out = append(out, s)
		case *ast.InlineFragment:
			var aerr *AgentError
			if out, aerr = w.fields(s.SelectionSet, out); aerr != nil {
				return nil, aerr
			}
		case *ast.FragmentSpread:
			def := w.doc.Fragments.ForName(s.Name)
			if def == nil {
				return nil, refuse(KindInvalidInput, "fragment %s is not defined", s.Name)
			}
			if w.on[s.Name] {
				return nil, refuse(KindInvalidInput, "fragment %s spreads itself", s.Name)
			}
			if w.on == nil {
				w.on = map[string]bool{}
			}
			w.on[s.Name] = true
			var aerr *AgentError
			out, aerr = w.fields(def.SelectionSet, out)
			delete(w.on, s.Name)
			if aerr != nil {
				return nil, aerr
			}
		}
	}
	return out, nil
}

// nested checks the selections under an allowed field: every field at any depth,
// through fragments, must not be a denied one.
func (w *readWalker) nested(set ast.SelectionSet, path string) *AgentError {
	fs, aerr := w.fields(set, nil)
	if aerr != nil {
		return aerr
	}
	for _, f := range fs {
		p := path + "." + f.Name
		if deniedField(f.Name) {
			return refuse(KindForbidden, "field %s (%s) is not available to an agent: it reaches past this session's issue", f.Name, p)
		}
		if aerr := w.nested(f.SelectionSet, p); aerr != nil {
			return aerr
		}
	}
	return nil
}

// query checks the root fields of a query operation.
func (w *readWalker) query(set ast.SelectionSet) *AgentError {
	fs, aerr := w.fields(set, nil)
	if aerr != nil {
		return aerr
	}
	for _, f := range fs {
		args, aerr := arguments(f)
		if aerr != nil {
			return aerr
		}
		switch f.Name {
		case "__typename":
			continue
		case "issue":
			if len(args) != 1 || args["id"] == nil {
				return refuse(KindForbidden, "issue takes only id, this session's issue")
			}
			if !w.own(w.r.value(args["id"])) {
				return refuse(KindScopeViolation, "issue: an agent may only read this session's issue (%s, id %s)", w.plan.identifier, w.plan.issueID)
			}
		case "viewer":
			vs, aerr := w.fields(f.SelectionSet, nil)
			if aerr != nil {
				return aerr
			}
			for _, v := range vs {
				if !contains(viewerFields, v.Name) || len(v.SelectionSet) > 0 {
					return refuse(KindForbidden, "viewer.%s is not available to an agent (allowed: viewer { %s })", v.Name, strings.Join(viewerFields, " "))
				}
			}
			continue
		case "team", "project":
			if len(args) != 1 || args["id"] == nil {
				return refuse(KindForbidden, "%s takes only id, this session's issue's %s", f.Name, f.Name)
			}
			id, ok := w.r.value(args["id"]).(string)
			if !ok || strings.TrimSpace(id) == "" {
				return refuse(KindInvalidInput, "%s: id must be a string", f.Name)
			}
			w.plan.scope = append(w.plan.scope, scopeRef{field: f.Name, value: strings.TrimSpace(id)})
		case "workflowStates":
			for name := range args {
				if name != "filter" && !contains(listArgs, name) {
					return refuse(KindForbidden, "workflowStates: argument %s is not allowed", name)
				}
			}
			team, aerr := teamFilter(w.r, args["filter"])
			if aerr != nil {
				return aerr
			}
			w.plan.scope = append(w.plan.scope, scopeRef{field: f.Name, value: team})
		case "__schema", "__type":
			return refuse(KindForbidden, "introspection (%s) is not available to an agent; Linear's schema is documented at https://studio.apollographql.com/public/Linear-API", f.Name)
		default:
			return refuse(KindForbidden, "query field %s is not available to an agent: it may read issue(id:) of its own issue, "+
				"workflowStates(filter: {team: {key: {eq: ...}}}) of its team, team(id:) and project(id:) of its issue, and viewer { id name }", f.Name)
		}
		if aerr := w.nested(f.SelectionSet, f.Name); aerr != nil {
			return aerr
		}
	}
	return nil
}

// teamFilter returns the team a workflowStates filter is narrowed to: it must name one
// team by id or key with eq, and may not widen it with or.
func teamFilter(r resolver, v *ast.Value) (string, *AgentError) {
	const how = "workflowStates needs filter: {team: {key: {eq: \"KEY\"}}} (or {team: {id: {eq: \"ID\"}}}) naming this session's issue's team"
	f, ok := r.value(v).(map[string]any)
	if !ok {
		return "", refuse(KindForbidden, "%s", how)
	}
	if _, ok := f["or"]; ok {
		return "", refuse(KindForbidden, "workflowStates: filter.or is not allowed; %s", how)
	}
	team, ok := f["team"].(map[string]any)
	if !ok || len(team) != 1 {
		return "", refuse(KindForbidden, "%s", how)
	}
	for _, k := range []string{"id", "key"} {
		if c, ok := team[k].(map[string]any); ok && len(c) == 1 {
			if s, ok := c["eq"].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s), nil
			}
		}
	}
	return "", refuse(KindForbidden, "%s", how)
}

// arguments maps a field's arguments by name and refuses one given twice.
func arguments(f *ast.Field) (map[string]*ast.Value, *AgentError) {
	args := map[string]*ast.Value{}
	for _, a := range f.Arguments {
		if _, dup := args[a.Name]; dup {
			return nil, refuse(KindInvalidInput, "%s: argument %s is given twice", f.Name, a.Name)
		}
		args[a.Name] = a.Value
	}
	return args, nil
}

// inScope refuses a query naming another team or project than the session issue's.
func (p agentPlan) inScope(a apiIssue) *AgentError {
	for _, ref := range p.scope {
		switch ref.field {
		case "project":
			if a.Project == nil || (ref.value != a.Project.ID && !strings.EqualFold(ref.value, a.Project.SlugID)) {
				return refuse(KindScopeViolation, "project: an agent may only read its issue's project (%s)", projectName(a))
			}
		default: // team, workflowStates
			if a.Team == nil || (ref.value != a.Team.ID && !strings.EqualFold(ref.value, a.Team.Key)) {
				return refuse(KindScopeViolation, "%s: an agent may only read its issue's team (%s)", ref.field, a.Team.Key)
			}
		}
	}
	return nil
}

func projectName(a apiIssue) string {
	if a.Project == nil {
		return "it has none"
	}
	return "slugId " + a.Project.SlugID
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
