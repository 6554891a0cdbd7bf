package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"sortie/internal/agentsock"
)

// NameLinearGraphQL is the linear_graphql tool's name.
const NameLinearGraphQL = "linear_graphql"

// Bounds the sidecar applies before a linear_graphql call reaches the daemon, which
// applies the same and its policy (internal/tracker/linear).
const (
	maxLinearQuery     = 16 << 10
	maxLinearVariables = 32 << 10
)

// LinearGraphQLSpec describes linear_graphql.
var LinearGraphQLSpec = Spec{
	Name: NameLinearGraphQL,
	Tier: TierExternal,
	Description: "Runs a GraphQL query against Linear (https://api.linear.app/graphql) with the daemon's credentials and returns " +
		"Linear's answer ({\"data\":...,\"errors\":[...]}) in data. Queries may read this session's own issue " +
		"(issue(id:) with its id or identifier, and what hangs off it: comments, labels, relations, parent, children), its team's " +
		"workflowStates(filter: {team: {key: {eq: \"KEY\"}}}), team(id:) and project(id:) of the issue, and viewer { id name }; " +
		"other issues, users' e-mail addresses, webhooks, keys, integrations and the organization are refused, unless the operator allows more. " +
		"Mutations are limited to this session's own issue: commentCreate(input: {issueId, body}), whose body may not have a line " +
		"starting with /sortie or Sortie's own headers, and issueUpdate(id, input: " +
		"{title, description, stateId, priority, estimate, labelIds, addedLabelIds, removedLabelIds, dueDate}); no subscriptions. " +
		`Answers {"success":true,"data":...} or {"success":false,"error":{"kind","message"}}.`,
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {
      "type": "string",
      "description": "One GraphQL operation (query or mutation)."
    },
    "variables": {
      "type": "object",
      "description": "The operation's variables."
    }
  },
  "required": ["query"],
  "additionalProperties": false
}`),
}

// LinearDaemon is the daemon's side of linear_graphql: *agentsock.Client.
type LinearDaemon interface {
	LinearGraphQL(ctx context.Context, req agentsock.LinearGraphQLRequest) (json.RawMessage, error)
}

// LinearGraphQL is the linear_graphql tool: the daemon runs the agent's GraphQL with its
// own Linear key, within a policy that keeps the agent to reading and to its own issue.
type LinearGraphQL struct {
	daemon  LinearDaemon
	timeout time.Duration
}

// NewLinearGraphQL returns linear_graphql calling d, each call bounded by timeout (0
// means DefaultCallTimeout).
func NewLinearGraphQL(d LinearDaemon, timeout time.Duration) *LinearGraphQL {
	return &LinearGraphQL{daemon: d, timeout: timeout}
}

// Spec implements Tool.
func (l *LinearGraphQL) Spec() Spec { return LinearGraphQLSpec }

// Call implements Tool.
func (l *LinearGraphQL) Call(ctx context.Context, args json.RawMessage) Result {
	var req agentsock.LinearGraphQLRequest
	if err := decodeArgs(LinearGraphQLSpec, args, &req); err != nil {
		return envelopeFail(KindInvalidInput, "%v", err)
	}
	vars := bytes.TrimSpace(req.Variables)
	switch {
	case strings.TrimSpace(req.Query) == "":
		return envelopeFail(KindInvalidInput, "%v", fieldError("query", "is required: one GraphQL operation"))
	case len(req.Query) > maxLinearQuery:
		return envelopeFail(KindInvalidInput, "%v", fieldError("query", "is %d bytes; the limit is %d", len(req.Query), maxLinearQuery))
	case len(vars) > maxLinearVariables:
		return envelopeFail(KindInvalidInput, "%v", fieldError("variables", "are %d bytes; the limit is %d", len(vars), maxLinearVariables))
	case len(vars) > 0 && vars[0] != '{' && string(vars) != "null":
		return envelopeFail(KindInvalidInput, "%v", fieldError("variables", "must be a JSON object"))
	}
	return daemonCall(ctx, l.timeout, KindTrackerTransport, func(ctx context.Context) (json.RawMessage, error) {
		return l.daemon.LinearGraphQL(ctx, req)
	})
}
