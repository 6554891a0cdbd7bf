package linear

// The GraphQL operations the adapter sends. Each asks only for the fields the adapter
// reads; connections are bounded with first: so that a query's complexity (what Linear
// charges against the complexity budget) stays small and predictable.

// issueFields is what normalize reads of an issue.
const issueFields = `id identifier title description priority url branchName createdAt updatedAt
      state { name }
      labels(first: 25) { nodes { name } }
      assignee { name displayName email }
      team { id key }
      project { slugId }
      parent { id identifier }
      inverseRelations(first: 25) { nodes { type issue { id identifier state { name } } } }`

const queryCandidates = `query SortieCandidates($filter: IssueFilter!, $first: Int!, $after: String) {
  issues(filter: $filter, first: $first, after: $after, orderBy: createdAt) {
    nodes {
      ` + issueFields + `
    }
    pageInfo { hasNextPage endCursor }
  }
}`

const queryIssue = `query SortieIssue($id: String!) {
  issue(id: $id) {
      ` + issueFields + `
  }
}`

// queryIssueTeam is what a transition needs: where the issue is and its team.
const queryIssueTeam = `query SortieIssueTeam($id: String!) {
  issue(id: $id) { id identifier state { id name } team { id key } project { id slugId } }
}`

const queryStates = `query SortieStates($filter: IssueFilter!, $first: Int!, $after: String) {
  issues(filter: $filter, first: $first, after: $after) {
    nodes { id identifier state { name } }
    pageInfo { hasNextPage endCursor }
  }
}`

const queryComments = `query SortieComments($id: String!, $first: Int!, $after: String) {
  issue(id: $id) {
    comments(first: $first, after: $after) {
      nodes { id body createdAt user { id name displayName email } botActor { name } }
      pageInfo { hasNextPage endCursor }
    }
  }
}`

const queryWorkflowStates = `query SortieWorkflowStates($team: ID!) {
  workflowStates(filter: { team: { id: { eq: $team } } }, first: 100) {
    nodes { id name type }
  }
}`

const queryViewer = `query SortieViewer { viewer { id name displayName email } }`

const mutationMove = `mutation SortieMove($id: String!, $state: String!) {
  issueUpdate(id: $id, input: { stateId: $state }) { success }
}`

const mutationComment = `mutation SortieComment($issue: String!, $body: String!) {
  commentCreate(input: { issueId: $issue, body: $body }) { success }
}`

// queryIssueLabels is what adding a label needs: where the issue is, its team (named,
// for the error when the label is missing) and the labels it has.
const queryIssueLabels = `query SortieIssueLabels($id: String!) {
  issue(id: $id) { id identifier team { id key name } project { id slugId } labels(first: 100) { nodes { id name } } }
}`

// queryLabelByName finds the labels an issue of a team may carry by name: the team's
// and the workspace's, not groups (which hold labels and are not put on issues).
const queryLabelByName = `query SortieLabelByName($filter: IssueLabelFilter!) {
  issueLabels(filter: $filter, first: 10) { nodes { id name team { id } } }
}`

const mutationAddLabel = `mutation SortieAddLabel($id: String!, $label: String!) {
  issueAddLabel(id: $id, labelId: $label) { success }
}`
