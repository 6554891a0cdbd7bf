package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"sortie/internal/agentsock"
)

// Tracker operations (spec/agent-extensions.md, tracker_api).
const (
	OpFetchIssue      = "fetch_issue"
	OpFetchComments   = "fetch_comments"
	OpSearchIssues    = "search_issues"
	OpTransitionIssue = "transition_issue"
)

// TrackerOperations lists the operations tracker_api accepts.
var TrackerOperations = []string{OpFetchIssue, OpFetchComments, OpSearchIssues, OpTransitionIssue}

// TrackerSpec describes tracker_api.
var TrackerSpec = Spec{
	Name: NameTracker,
	Tier: TierExternal,
	Description: "Reads and updates the issue tracker this session works for, with the daemon's credentials " +
		"and scoped to the configured project. Operations: fetch_issue and fetch_comments (need issue_id), " +
		"search_issues (the project's active issues), transition_issue (needs issue_id and target_state, " +
		`e.g. "In Review"). transition_issue moves this session's own issue only; other issues of the project ` +
		"are read without their comments unless the operator allows more, and a refusal is the error " +
		`project_scope_violation. Answers {"success":true,"data":...} or {"success":false,"error":{"kind","message"}}.`,
	InputSchema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "operation": {
      "type": "string",
      "enum": ["fetch_issue", "fetch_comments", "search_issues", "transition_issue"],
      "description": "What to do."
    },
    "issue_id": {
      "type": "string",
      "description": "The tracker-internal issue ID. Required for fetch_issue, fetch_comments and transition_issue."
    },
    "target_state": {
      "type": "string",
      "description": "The state to move this session's own issue to, e.g. \"In Review\". Required for transition_issue."
    }
  },
  "required": ["operation"],
  "additionalProperties": false
}`),
}

// TrackerAPI is the tracker_api tool. It checks each call locally, then has the daemon
// perform it with the tracker credentials only the daemon holds.
type TrackerAPI struct {
	daemon  Daemon
	timeout time.Duration
}

// NewTracker returns tracker_api calling d, each call bounded by timeout (0 means
// DefaultCallTimeout).
func NewTracker(d Daemon, timeout time.Duration) *TrackerAPI {
	return &TrackerAPI{daemon: d, timeout: timeout}
}

// Spec implements Tool.
func (t *TrackerAPI) Spec() Spec { return TrackerSpec }

// Call implements Tool.
func (t *TrackerAPI) Call(ctx context.Context, args json.RawMessage) Result {
	var req agentsock.TrackerRequest
	if err := decodeArgs(TrackerSpec, args, &req); err != nil {
		return envelopeFail(KindInvalidInput, "%v", err)
	}
	if kind, err := checkTrackerRequest(req); err != nil {
		return envelopeFail(kind, "%v", err)
	}
	return daemonCall(ctx, t.timeout, KindTrackerTransport, func(ctx context.Context) (json.RawMessage, error) {
		return t.daemon.Tracker(ctx, req)
	})
}

// checkTrackerRequest applies the per-operation rules of the spec before anything
// reaches the daemon, and returns the error kind with the error.
func checkTrackerRequest(req agentsock.TrackerRequest) (string, error) {
	op := req.Operation
	if op == "" {
		return KindInvalidInput, fieldError("operation", "is required; one of %s", strings.Join(TrackerOperations, ", "))
	}
	if !slices.Contains(TrackerOperations, op) {
		return KindUnsupportedOperation, fmt.Errorf("operation %q is not supported; use one of %s", op, strings.Join(TrackerOperations, ", "))
	}
	needsIssue := op != OpSearchIssues
	switch {
	case needsIssue && strings.TrimSpace(req.IssueID) == "":
		return KindInvalidInput, fieldError("issue_id", "is required for %s", op)
	case !needsIssue && req.IssueID != "":
		return KindInvalidInput, fieldError("issue_id", "is not accepted by search_issues, which lists the project's active issues")
	case op == OpTransitionIssue && strings.TrimSpace(req.TargetState) == "":
		return KindInvalidInput, fieldError("target_state", "is required for transition_issue")
	case op != OpTransitionIssue && req.TargetState != "":
		return KindInvalidInput, fieldError("target_state", "is only accepted by transition_issue (got operation %s)", op)
	}
	return "", nil
}
