package agentsock

import (
	"context"
	"encoding/json"
)

// LinearGraphQLRequest is a linear_graphql call: a GraphQL document and its variables
// (a JSON object, or absent), which the daemon runs against Linear with its own key.
type LinearGraphQLRequest struct {
	Query     string          `json:"query"`
	Variables json.RawMessage `json:"variables,omitempty"`
}

// LinearGraphQLHandler is the optional part of a Handler that serves linear_graphql
// (POST /v1/linear_graphql). A Handler without it answers unsupported_operation.
type LinearGraphQLHandler interface {
	// LinearGraphQL runs req for sess and returns Linear's answer (data and errors).
	LinearGraphQL(ctx context.Context, sess Session, req LinearGraphQLRequest) (json.RawMessage, *Error)
}

// LinearGraphQL performs a linear_graphql call, with errors as for Tracker.
func (c *Client) LinearGraphQL(ctx context.Context, req LinearGraphQLRequest) (json.RawMessage, error) {
	return c.call(ctx, "/v1/linear_graphql", req)
}
