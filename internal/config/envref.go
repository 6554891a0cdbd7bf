package config

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// envRef is one $VAR or ${VAR} that expandEnv could not resolve.
type envRef struct {
	Name  string
	Empty bool // set but empty, as opposed to unset
}

// expandEnv replaces $VAR and ${VAR} in s using lookup, with os.Expand's syntax. It
// returns the variables that were unset or empty; they expand to "".
func expandEnv(s string, lookup func(string) (string, bool)) (string, []envRef) {
	var missing []envRef
	out := os.Expand(s, func(name string) string {
		v, ok := lookup(name)
		if v == "" && !slices.ContainsFunc(missing, func(r envRef) bool { return r.Name == name }) {
			missing = append(missing, envRef{Name: name, Empty: ok})
		}
		return v
	})
	return out, missing
}

// envNameRE matches a portable environment variable name.
var envNameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`) })

// EnvRefs returns the names of the variables s references as $VAR or ${VAR}.
func EnvRefs(s string) []string {
	var names []string
	os.Expand(s, func(name string) string {
		if envNameRE().MatchString(name) && !slices.Contains(names, name) {
			names = append(names, name)
		}
		return ""
	})
	return names
}

// expandHome replaces a leading `~` or `~/` with home. `~user` is left alone.
func expandHome(p, home string) (string, bool) {
	if p == "~" {
		return home, true
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return home + "/" + rest, true
	}
	return p, false
}
