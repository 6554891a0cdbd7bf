package notify

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"
)

// envNameRE matches a portable environment variable name.
var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// expand replaces $VAR and ${VAR} in s using lookup, with the syntax of os.Expand, as
// package config does for the settings it expands. It returns the expanded value, the
// well-formed variable names it referenced, and one message per variable that is unset
// or empty: a backend with a blank secret must not start (spec/agent-tools-tiers.md,
// "invalidity fails fast").
func expand(s string, lookup func(string) (string, bool)) (string, []string, []string) {
	var seen, names, msgs []string
	out := os.Expand(s, func(name string) string {
		v, ok := lookup(name)
		if slices.Contains(seen, name) {
			return v
		}
		seen = append(seen, name)
		shown := name
		if envNameRE().MatchString(name) {
			names = append(names, name)
		} else {
			shown = strconv.Quote(clip(name, 64))
		}
		switch {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("environment variable %s is not set", shown))
		case v == "":
			msgs = append(msgs, fmt.Sprintf("environment variable %s is empty", shown))
		}
		return v
	})
	return out, names, msgs
}
