package linear

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/parser"

	"sortie/internal/tracker"
)

// The linear_graphql tool (docs/agent-tools.md): an agent sends a GraphQL document and
// variables; the daemon runs it with its own key, after this policy, and returns
// Linear's answer. The policy keeps the agent to reading and to its own issue.
const (
	// MaxAgentQuery bounds the document, MaxAgentVariables the variables' JSON.
	MaxAgentQuery     = 16 << 10
	MaxAgentVariables = 32 << 10
	// MaxAgentResponse bounds the answer returned to the agent (1 MiB).
	MaxAgentResponse = 1 << 20
	// maxAgentTokens bounds the parser's work on one document.
	maxAgentTokens = 4000
	// maxAgentMutations bounds the mutation fields of one document.
	maxAgentMutations = 5
)

// Kinds of a refused linear_graphql call, besides the tracker error kinds of a call
// Linear failed.
const (
	KindInvalidInput    = "invalid_input"           // not one parseable operation, too big, bad variables
	KindForbidden       = "forbidden_operation"     // a subscription, a mutation or input field not allowed
	KindScopeViolation  = "project_scope_violation" // a mutation of another issue than the session's
	KindResponseTooLong = "response_too_large"      // the answer is over MaxAgentResponse
	KindRateLimited     = "rate_limited"            // the session's issue made too many calls (agentlimit.go)
)

// AgentError is a linear_graphql call the policy refused, or whose answer was too
// large: Kind is the tool's error kind.
type AgentError struct {
	Kind    string
	Message string
}

func (e *AgentError) Error() string { return e.Message }

// AgentErrorKind is the error kind the tool reports.
func (e *AgentError) AgentErrorKind() string { return e.Kind }

func refuse(kind, format string, args ...any) *AgentError {
	return &AgentError{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// The mutations an agent may send, and the input fields each may set. Nothing else:
// no deletes or archives, no moves to another team or project, no other issue.
var (
	commentInputFields = []string{"issueId", "body"}
	updateInputFields  = []string{"title", "description", "stateId", "priority", "estimate",
		"labelIds", "addedLabelIds", "removedLabelIds", "dueDate"}
)

// AgentGraphQL runs an agent's linear_graphql call for the session's issue (issueID, the
// UUID, and identifier, ENG-42) and returns Linear's answer, data and errors, as JSON.
// Queries are allowed; mutations only commentCreate on the issue (issueId and body) and
// issueUpdate of the issue (the fields in updateInputFields); subscriptions never.
// Refusals are *AgentError; failures to reach Linear are *tracker.Error.
//
// A call that moves the issue's state calls moving with the state's name before it is
// sent (a poll may see the move at once); the function moving returns, when not nil, is
// then told whether Linear made the move: no GraphQL errors, and the issueUpdate's
// answer present with success not false.
func (t *Tracker) AgentGraphQL(ctx context.Context, issueID, identifier, query string, variables json.RawMessage, moving func(state string) (settled func(moved bool))) (json.RawMessage, error) {
	const op = "linear_graphql"
	// Below the agent's floor nothing of the call is sent, its own checks included:
	// what is left of the budgets is polling's.
	if held := t.limits.hold(t.now(), agentFloorFraction); held != nil {
		return nil, &tracker.Error{Kind: tracker.ErrAPI, Op: op, Message: "held back, no request sent", Err: held}
	}
	plan, vars, aerr := checkAgentCall(query, variables, issueID, identifier, t.agentReadsUnrestricted)
	if aerr != nil {
		return nil, aerr
	}
	if aerr := t.agentCalls.take(issueID, t.now(), plan.comments); aerr != nil {
		return nil, aerr
	}
	var settle func(moved bool)
	if plan.mutation || len(plan.scope) > 0 {
		// The session's issue must be in the scope before anything changes, and a
		// query naming a team or project must name the issue's.
		a, err := t.issueTeam(ctx, op, agentFloorFraction, issueID)
		if err != nil {
			return nil, err
		}
		if aerr := plan.inScope(a); aerr != nil {
			return nil, aerr
		}
		if plan.stateID != "" {
			st, err := t.states.byID(ctx, t, op, agentFloorFraction, a.Team.ID, plan.stateID)
			if errors.Is(err, errNoSuchState) {
				return nil, refuse(KindInvalidInput, "stateId %q is not a workflow state of team %s: look the states up with a workflowStates query", plan.stateID, a.Team.Key)
			}
			if err != nil {
				return nil, err
			}
			if moving != nil {
				settle = moving(st.Name)
			}
		}
	}
	answer, err := t.agentSend(ctx, op, query, vars)
	if settle != nil {
		settle(err == nil && movedBy(answer, plan.stateField))
	}
	return answer, err
}

// agentSend sends an agent's checked call and returns Linear's answer.
func (t *Tracker) agentSend(ctx context.Context, op, query string, vars map[string]any) (json.RawMessage, error) {
	payload, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return nil, refuse(KindInvalidInput, "variables: %v", err)
	}
	x, err := t.post(ctx, op, payload, agentFloorFraction, MaxAgentResponse)
	if tracker.KindOf(err) == tracker.ErrPayload && strings.Contains(err.Error(), "larger than") {
		return nil, refuse(KindResponseTooLong, "Linear's answer is larger than %d bytes; ask for fewer fields or fewer nodes (first:)", MaxAgentResponse)
	}
	if err != nil {
		return nil, err
	}
	var r gqlResponse
	if json.Unmarshal(x.body, &r) != nil || (len(r.Data) == 0 && len(r.Errors) == 0) {
		if x.status != http.StatusOK {
			return nil, t.statusError(op, x.status, x.body)
		}
		return nil, tracker.Errorf(tracker.ErrPayload, op, "Linear's answer is not a GraphQL response")
	}
	for _, e := range r.Errors {
		// The agent sees Linear's own errors about its query, but a refused key is the
		// operator's problem and is reported as such.
		if c := strings.ToUpper(e.Extensions.Code); c == "AUTHENTICATION_ERROR" {
			return nil, t.graphQLError(op, x.status, r.Errors)
		}
	}
	return json.RawMessage(x.body), nil
}

// movedBy reports whether Linear's answer to an agent's call says the issueUpdate
// answering at field (its alias) was made: no errors, the field's answer present, and
// its success, when asked for, true.
func movedBy(answer json.RawMessage, field string) bool {
	var r struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []json.RawMessage          `json:"errors"`
	}
	if field == "" || json.Unmarshal(answer, &r) != nil || len(r.Errors) > 0 {
		return false
	}
	var out map[string]json.RawMessage
	if json.Unmarshal(r.Data[field], &out) != nil || out == nil {
		return false
	}
	if s, asked := out["success"]; asked {
		return string(s) == "true"
	}
	return true
}

// agentPlan is what the policy found a document will do.
type agentPlan struct {
	issueID, identifier string // the session's issue
	mutation            bool
	stateID             string     // set when an issueUpdate sets stateId
	stateField          string     // that issueUpdate's name in the answer (its alias)
	comments            int        // commentCreate fields
	scope               []scopeRef // teams and projects a query names, checked by inScope
}

// checkAgentCall parses and checks an agent's call, and returns the variables to send.
// Unless unrestricted, a query may read only what agentread.go allows.
func checkAgentCall(query string, variables json.RawMessage, issueID, identifier string, unrestricted bool) (agentPlan, map[string]any, *AgentError) {
	plan := agentPlan{issueID: issueID, identifier: identifier}
	switch {
	case strings.TrimSpace(query) == "":
		return plan, nil, refuse(KindInvalidInput, "query is required")
	case len(query) > MaxAgentQuery:
		return plan, nil, refuse(KindInvalidInput, "query is %d bytes; the limit is %d", len(query), MaxAgentQuery)
	case len(variables) > MaxAgentVariables:
		return plan, nil, refuse(KindInvalidInput, "variables are %d bytes; the limit is %d", len(variables), MaxAgentVariables)
	}
	vars := map[string]any{}
	if v := strings.TrimSpace(string(variables)); v != "" && v != "null" {
		dec := json.NewDecoder(strings.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&vars); err != nil || vars == nil {
			return plan, nil, refuse(KindInvalidInput, "variables must be a JSON object")
		}
	}
	doc, err := parser.ParseQueryWithTokenLimit(&ast.Source{Input: query}, maxAgentTokens)
	if err != nil {
		return plan, nil, refuse(KindInvalidInput, "the query does not parse: %v", err)
	}
	if len(doc.Operations) != 1 {
		return plan, nil, refuse(KindInvalidInput, "send exactly one operation per call (got %d)", len(doc.Operations))
	}
	o := doc.Operations[0]
	own := func(v any) bool {
		s, ok := v.(string)
		s = strings.TrimSpace(s)
		return ok && (s == issueID || (identifier != "" && strings.EqualFold(s, identifier)))
	}
	r := resolver{vars: vars, defs: o.VariableDefinitions}
	w := &readWalker{r: r, doc: doc, own: own, plan: &plan}
	switch o.Operation {
	case ast.Subscription:
		return plan, nil, refuse(KindForbidden, "subscriptions are not available through linear_graphql")
	case ast.Query:
		if unrestricted {
			return plan, vars, nil
		}
		if aerr := w.query(o.SelectionSet); aerr != nil {
			return plan, nil, aerr
		}
		return plan, vars, nil
	}
	plan.mutation = true
	if len(o.SelectionSet) > maxAgentMutations {
		return plan, nil, refuse(KindInvalidInput, "at most %d mutations per call", maxAgentMutations)
	}
	for _, sel := range o.SelectionSet {
		f, ok := sel.(*ast.Field)
		if !ok {
			return plan, nil, refuse(KindForbidden, "write mutation fields directly, not through fragments")
		}
		if len(f.Directives) > 0 {
			return plan, nil, refuse(KindForbidden, "directives are not allowed on mutation fields")
		}
		args, aerr := arguments(f)
		if aerr != nil {
			return plan, nil, aerr
		}
		// What a mutation answers is read as a query's nested fields are.
		if !unrestricted {
			if aerr := w.nested(f.SelectionSet, f.Name); aerr != nil {
				return plan, nil, aerr
			}
		}
		switch f.Name {
		case "commentCreate":
			if len(args) != 1 || args["input"] == nil {
				return plan, nil, refuse(KindForbidden, "commentCreate takes only input: {issueId, body}")
			}
			in, aerr := r.object(args["input"], "commentCreate input", commentInputFields)
			if aerr != nil {
				return plan, nil, aerr
			}
			if !own(in["issueId"]) {
				return plan, nil, refuse(KindScopeViolation, "commentCreate may only comment on this session's issue (%s, id %s)", identifier, issueID)
			}
			body, _ := in["body"].(string)
			if line, bad := imitatesSortie(body); bad {
				return plan, nil, refuse(KindForbidden, "commentCreate: the body's line %q reads like Sortie's own comments or a checkpoint answer; "+
					"an agent's comment may not start a line with /sortie or with Sortie's headers (Sortie checkpoint:, Sortie session, Sortie:)", line)
			}
			plan.comments++
		case "issueUpdate":
			if len(args) != 2 || args["id"] == nil || args["input"] == nil {
				return plan, nil, refuse(KindForbidden, "issueUpdate takes only id and input")
			}
			if !own(r.value(args["id"])) {
				return plan, nil, refuse(KindScopeViolation, "issueUpdate may only update this session's issue (%s, id %s)", identifier, issueID)
			}
			in, aerr := r.object(args["input"], "issueUpdate input", updateInputFields)
			if aerr != nil {
				return plan, nil, aerr
			}
			if s, ok := in["stateId"]; ok {
				id, isString := s.(string)
				if !isString || id == "" {
					return plan, nil, refuse(KindInvalidInput, "issueUpdate input.stateId must be a workflow state id")
				}
				if plan.stateID != "" && plan.stateID != id {
					return plan, nil, refuse(KindInvalidInput, "one state change per call")
				}
				plan.stateID = id
				plan.stateField = f.Alias
				if plan.stateField == "" {
					plan.stateField = f.Name
				}
			}
		default:
			return plan, nil, refuse(KindForbidden, "mutation %s is not allowed; an agent may only commentCreate on its issue and issueUpdate its issue", f.Name)
		}
	}
	return plan, vars, nil
}

// sortieHeaders are how Sortie's own comments begin (orchestrator/comments.go and
// workflow/checkpoint: CommentPrefix and the "/sortie choose" answers), lower case: an agent's comment must not pass for one of them.
var sortieHeaders = []string{"/sortie", "sortie checkpoint", "sortie session", "sortie:"}

// imitatesSortie returns the first line of body that begins, past Markdown decoration,
// blanks and invisible characters, like a Sortie comment or a checkpoint command.
func imitatesSortie(body string) (string, bool) {
	for _, line := range strings.Split(body, "\n") {
		clean := strings.Map(func(r rune) rune {
			if unicode.Is(unicode.Cf, r) {
				return -1 // zero-width and other format characters
			}
			return r
		}, line)
		clean = strings.TrimLeftFunc(clean, func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '/'
		})
		low := strings.ToLower(clean)
		for _, h := range sortieHeaders {
			if strings.HasPrefix(low, h) {
				if len(line) > 80 {
					line = line[:80] + "…"
				}
				return line, true
			}
		}
	}
	return "", false
}

// resolver evaluates argument values: literals, and variables with their defaults.
type resolver struct {
	vars map[string]any
	defs ast.VariableDefinitionList
}

func (r resolver) value(v *ast.Value) any {
	if v == nil {
		return nil
	}
	switch v.Kind {
	case ast.Variable:
		if x, ok := r.vars[v.Raw]; ok {
			return x
		}
		if d := r.defs.ForName(v.Raw); d != nil && d.DefaultValue != nil {
			return r.value(d.DefaultValue)
		}
		return nil
	case ast.IntValue, ast.FloatValue:
		if f, err := strconv.ParseFloat(v.Raw, 64); err == nil {
			return f
		}
		return v.Raw
	case ast.BooleanValue:
		return v.Raw == "true"
	case ast.NullValue:
		return nil
	case ast.ListValue:
		out := []any{}
		for _, c := range v.Children {
			out = append(out, r.value(c.Value))
		}
		return out
	case ast.ObjectValue:
		out := map[string]any{}
		for _, c := range v.Children {
			if _, dup := out[c.Name]; dup {
				// Which one the server would take is not ours to guess.
				return errDuplicateField
			}
			out[c.Name] = r.value(c.Value)
		}
		return out
	}
	return v.Raw
}

// errDuplicateField stands for an input object that names a field twice; it is not an
// object, so object refuses it.
var errDuplicateField = struct{ duplicate bool }{true}

// object resolves an input object and refuses fields outside allowed.
func (r resolver) object(v *ast.Value, what string, allowed []string) (map[string]any, *AgentError) {
	m, ok := r.value(v).(map[string]any)
	if !ok {
		return nil, refuse(KindInvalidInput, "%s must be an object", what)
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return nil, refuse(KindForbidden, "%s: field %s is not allowed (allowed: %s)", what, k, strings.Join(allowed, ", "))
		}
	}
	return m, nil
}
