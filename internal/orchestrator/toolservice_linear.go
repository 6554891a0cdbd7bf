package orchestrator

import (
	"context"
	"encoding/json"
	"errors"

	"sortie/internal/server/agentsock"
	"sortie/internal/tracker"
)

// linearGraphQL is what linear_graphql needs of the tracker: the Linear adapter's
// AgentGraphQL, which checks the call against its policy (reads, and writes to the
// session's own issue only) and runs it with the daemon's key. moving is told the
// state the call moves the issue to, before the call is sent; the function it returns
// is told whether Linear made the move.
type linearGraphQL interface {
	AgentGraphQL(ctx context.Context, issueID, identifier, query string, variables json.RawMessage, moving func(state string) (settled func(moved bool))) (json.RawMessage, error)
}

// linear returns the tracker's linear_graphql side when the tracker in force is Linear.
func (t *ToolService) linear() linearGraphQL {
	if t.Issues == nil || t.Config == nil {
		return nil
	}
	if cfg := t.Config(); cfg == nil || cfg.Tracker.Kind != "linear" {
		return nil
	}
	l, _ := tracker.As[linearGraphQL](t.Issues)
	return l
}

// LinearGraphQL runs one linear_graphql call for the session's issue. A call that
// moves the issue tells AgentMoved first, withdraws that when Linear did not make the
// move, and wakes the loop after one it made, as transition_issue does. Comments it
// posts are by the daemon's own account, which never answers a checkpoint
// (answerRefusal).
func (t *ToolService) LinearGraphQL(ctx context.Context, sess agentsock.Session, req agentsock.LinearGraphQLRequest) (json.RawMessage, *agentsock.Error) {
	l := t.linear()
	if l == nil {
		return nil, agentsock.Errorf("unsupported_operation", "this daemon serves no linear_graphql (tracker.kind is not linear)")
	}
	ctx, cancel := context.WithTimeout(ctx, t.timeout())
	defer cancel()
	data, err := l.AgentGraphQL(ctx, sess.IssueID, sess.Identifier, req.Query, req.Variables, func(state string) func(bool) {
		settle := t.agentMoving(sess, state)
		return func(moved bool) {
			settle(moved)
			if moved && t.Refresh != nil {
				t.Refresh()
			}
		}
	})
	if err != nil {
		var refused interface{ AgentErrorKind() string }
		if errors.As(err, &refused) {
			return nil, agentsock.Errorf(refused.AgentErrorKind(), "%v", err)
		}
		return nil, trackerError(err)
	}
	return data, nil
}

var _ agentsock.LinearGraphQLHandler = (*ToolService)(nil)
