package agenttools

import (
	"context"
	"encoding/json"
	"errors"

	"sortie/internal/agentsock"
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
func (t *Service) linear() linearGraphQL { return linearOf(t.o) }

// linearOf is the linear_graphql side of o's tracker when the tracker in force is Linear.
func linearOf(o Options) linearGraphQL {
	if o.Tracker == nil || o.Config == nil {
		return nil
	}
	if cfg := o.Config(); cfg == nil || cfg.Tracker.Kind != "linear" {
		return nil
	}
	l, _ := tracker.As[linearGraphQL](o.Tracker)
	return l
}

// LinearGraphQL runs one linear_graphql call for the session's issue. A call that
// moves the issue out of the active states while a blocking workflow checkpoint has no
// human answer is refused (handoff_refused) and not sent. A call that moves the issue
// tells AgentMoving first, withdraws that when Linear did not make the
// move, and wakes the loop after one it made, as transition_issue does. Comments it
// posts are by the daemon's own account, which never answers a checkpoint (the
// checkpoint.AnswerRefusal).
func (t *Service) LinearGraphQL(ctx context.Context, sess agentsock.Session, req agentsock.LinearGraphQLRequest) (json.RawMessage, *agentsock.Error) {
	l := t.linear()
	if l == nil {
		return nil, agentsock.Errorf("unsupported_operation", "this daemon serves no linear_graphql (tracker.kind is not linear)")
	}
	ctx, cancel := context.WithTimeout(ctx, t.o.Timeout)
	defer cancel()
	var refused *agentsock.Error
	data, err := l.AgentGraphQL(ctx, sess.IssueID, sess.Identifier, req.Query, req.Variables, func(state string) func(bool) {
		// A move out of the active states waits for the workflow's humans, as
		// transition_issue does (handoffAllowed). The adapter cannot be told no here;
		// cancelling the call's context before it is sent keeps it from being sent
		// (net/http sends nothing on a cancelled context).
		if e := t.handoffAllowed(ctx, sess, state); e != nil {
			refused = e
			cancel()
			return func(bool) {}
		}
		settle := t.agentMoving(sess, state)
		return func(moved bool) {
			settle(moved)
			if moved {
				t.refresh()
			}
		}
	})
	if refused != nil {
		return nil, refused
	}
	if err != nil {
		var policy interface{ AgentErrorKind() string }
		if errors.As(err, &policy) {
			return nil, agentsock.Errorf(policy.AgentErrorKind(), "%v", err)
		}
		return nil, trackerError(err)
	}
	return data, nil
}

var _ agentsock.LinearGraphQLHandler = (*Service)(nil)
