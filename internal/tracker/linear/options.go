package linear

import (
	"fmt"

	"sortie/internal/option"
	"sortie/internal/tracker"
)

// options are the typed contents of the `linear:` block.
type options struct {
	// agentReadsUnrestricted is agent_reads: unrestricted.
	agentReadsUnrestricted bool
}

// optionSpecs declares the `linear:` block (tracker.Meta.Options): New reads it by
// this declaration, and config warns about any other key in it.
var optionSpecs = option.Set{Keys: []option.Option{
	{Key: "agent_reads", Default: "scoped", Doc: "what linear_graphql lets an agent read: scoped (its own issue, team and project) or unrestricted",
		Set: option.Field(agentReads, func(o *options) *bool { return &o.agentReadsUnrestricted })},
}}

func init() {
	// Neither requirement is declared in Meta: Linear is scoped by a project or a
	// team, which New checks with errors naming Linear's keys.
	tracker.Register("linear", tracker.Meta{Options: optionSpecs}, New)
}

// agentReads reads linear.agent_reads, written exactly: true for unrestricted.
func agentReads(v any) (bool, error) {
	switch v {
	case "", "scoped":
		return false, nil
	case "unrestricted":
		return true, nil
	}
	return false, fmt.Errorf("must be scoped (the default: an agent reads only its own issue, team and project) or unrestricted (got %v)", v)
}

// parseOptions reads the `linear:` block.
func parseOptions(raw map[string]any) (options, error) {
	// An unknown key is ignored here; config warns about it (unknown_sub_key).
	opts, _, err := option.Read[options](optionSpecs, "linear", raw, "")
	if err != nil {
		return options{}, &tracker.Error{Kind: tracker.ErrPayload, Message: "config: " + err.Error()}
	}
	return opts, nil
}
