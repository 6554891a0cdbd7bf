package workflow

import "encoding/json"

// Skill is a behavioural protocol for the agent: NN-{id}.{ext} in a
// workflow's skills/ directory, or in meta/skills/ for universal skills.
// The loader checks the fields below; the rest of the document is prose for
// the agent, kept verbatim in Document.
type Skill struct {
	ID          string `json:"id"`
	Version     string `json:"version"`
	Capability  string `json:"capability"`
	Description string `json:"description,omitempty"`
	// Resources are resource references: a bare index ("06") resolves in
	// the skill's workflow, a prefixed one ("meta/05") in the named one.
	Resources []string `json:"resources,omitempty"`

	// Document is the whole skill as JSON, keys in file order.
	Document json.RawMessage `json:"-"`
	// Workflow is the id of the workflow whose skills/ directory holds it.
	Workflow string `json:"-"`
	file     string
}

// Resource is reference material a skill points to: NN-{name}.{ext} in a
// workflow's resources/ directory.
type Resource struct {
	// Index is the normalised three-digit index ("005").
	Index string
	// Name is the file name without index and extension.
	Name string
	// ID and Version come from Markdown front matter (id:, version:) or the
	// top level of a structured resource; either may be empty.
	ID      string
	Version string
	// Content is the body: Markdown without front matter, or the file text
	// of a structured resource.
	Content string
	// Workflow is the id of the workflow that holds it.
	Workflow string
	file     string
}
